/** The fleet's shared state store cannot be reached: answered 503, never half-written. */
export class StoreUnavailableError extends Error {}
