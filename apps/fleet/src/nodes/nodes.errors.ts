export class NodeNotFoundError extends Error {
  constructor(readonly nodeId: string) {
    super(`node ${nodeId} is not enrolled (or silent for more than 30 s)`);
  }
}
