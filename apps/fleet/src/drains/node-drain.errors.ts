/**
 * A drain refused: 404 (no node of that id is known, nor drained), 409 (a drain of the node is
 * under way, on any controller: its claim in the store).
 */
export class NodeDrainRefusedError extends Error {
  constructor(
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
  }
}
