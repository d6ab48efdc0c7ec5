/**
 * `node declare-dead` refused, in the controller's words: 409 (its lease is still renewed, or
 * the fleet is not in etcd mode) or 404 (no lease of it was ever known). Nothing was marked.
 */
export class DeclareDeadRefusedError extends Error {
  constructor(
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
  }
}
