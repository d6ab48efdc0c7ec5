/** Longest agent message the controller passes on. */
export const RELAYED_MESSAGE_MAX_CHARS = 200;

/** C0 and C1 controls, line and paragraph separators, bidirectional overrides and isolates. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * The message of an agent's JSON error body (`{"message": "..."}`), fit to pass on to a
 * client: control characters removed, at most 200 characters. Undefined when the body is not
 * such a JSON object: then nothing of it is passed on.
 */
export function agentErrorMessage(body: unknown): string | undefined {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const message = (parsed as { message?: unknown }).message;
  if (typeof message !== 'string') return undefined;
  const characters = Array.from(message.replace(UNSHOWABLE, '').trim());
  if (characters.length === 0) return undefined;
  return characters.length > RELAYED_MESSAGE_MAX_CHARS
    ? characters.slice(0, RELAYED_MESSAGE_MAX_CHARS - 1).join('') + '…'
    : characters.join('');
}
