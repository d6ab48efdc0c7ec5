/** Largest request body either daemon accepts. */
export const MAX_BODY_BYTES = 1024 * 1024;
