/**
 * A move refused by the rules or by the VM's node, in the controller's words: 404 (no such VM),
 * 409 (not Running or Stopped, its node silent, another move of it under way), 422 (`to` not a
 * live node or its own, the node's refusal: another machine type, CPU model, accelerator).
 * The VM stays where it is.
 */
export class VmMoveRefusedError extends Error {
  constructor(
    readonly status: 404 | 409 | 422,
    message: string,
  ) {
    super(message);
  }
}

/** A move that failed midway, or whose new node did not report the VM in time: 502. */
export class VmMoveFailedError extends Error {}
