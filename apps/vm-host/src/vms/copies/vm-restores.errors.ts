/**
 * A restore's source cannot be used (none such here, backups off, a damaged file): 422, or 400
 * for a source that names neither or both kinds; nothing was made.
 */
export class RestoreSourceError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 422 = 422,
  ) {
    super(message);
  }
}
