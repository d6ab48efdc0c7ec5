/** Longest part of Redis's own words a log line or a 503 quotes. */
const MAX_REDIS_REASON_CHARS = 200;

/** Why a Redis that answers will not serve the controller, in words an operator acts on. */
const REFUSALS: ReadonlyArray<{ code: string; meaning: string }> = [
  {
    code: 'DENIED',
    meaning:
      'refused: protected mode (DENIED): with no password set, Redis serves only its own host; set one (requirepass) and give it in VM_FLEET_REDIS_URL (redis://:<password>@host:6379/0)',
  },
  {
    code: 'NOAUTH',
    meaning:
      'refused: a password is required (NOAUTH); give it in VM_FLEET_REDIS_URL (redis://:<password>@host:6379/0)',
  },
  {
    code: 'WRONGPASS',
    meaning:
      'refused: wrong password or user (WRONGPASS); check the password in VM_FLEET_REDIS_URL',
  },
  {
    code: 'READONLY',
    meaning:
      'refused: a read-only replica (READONLY), as after a failover; point VM_FLEET_REDIS_URL at the primary',
  },
];

/** What a Redis error means: its refusal code (if it is one of those above) and the words for it. */
export interface RedisErrorMeaning {
  /** DENIED, NOAUTH, WRONGPASS, READONLY; absent for anything else. */
  refusal?: string;
  text: string;
}

/**
 * An error of the Redis client in words for the log and the 503: a refusal named and explained,
 * with Redis's own reason after it; anything else as it came. Either way on one line, bounded,
 * and with every `secret` (the URL's password) blanked out, should Redis ever quote it.
 */
export function describeRedisError(error: unknown, secrets: readonly string[]): RedisErrorMeaning {
  const message = clean(error instanceof Error ? error.message : String(error), secrets);
  // The ready check's failure wraps Redis's reply: "Ready check failed: NOAUTH ...".
  const reply = /(?:^|: )([A-Z]+) (.*)$/.exec(message);
  const known = reply && REFUSALS.find((refusal) => refusal.code === reply[1]);
  if (!reply || !known) return { text: bounded(message) };
  return { refusal: known.code, text: `${known.meaning}; Redis said: "${firstWords(reply[2])}"` };
}

/** One line of printable text, with no secret in it. */
function clean(text: string, secrets: readonly string[]): string {
  let cleaned = text;
  for (const secret of secrets) cleaned = cleaned.split(secret).join('***');
  // eslint-disable-next-line no-control-regex
  return cleaned.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
}

/** Redis's reason up to the end of a sentence, within the bound (DENIED's runs to 900 characters). */
function firstWords(reason: string): string {
  // A refusal inside one of our scripts names the script too: not the operator's concern.
  const words = reason.replace(/ script: .*$/, '');
  if (words.length <= MAX_REDIS_REASON_CHARS) return words;
  const cut = words.slice(0, MAX_REDIS_REASON_CHARS);
  const sentenceEnd = cut.lastIndexOf('. ');
  return sentenceEnd > 0 ? cut.slice(0, sentenceEnd + 1) : `${cut}...`;
}

function bounded(text: string): string {
  return text.length <= MAX_REDIS_REASON_CHARS * 2
    ? text
    : `${text.slice(0, MAX_REDIS_REASON_CHARS * 2)}...`;
}

/**
 * The password a Redis URL carries (in its userinfo or its query), to keep out of words. Not one
 * of 3 characters or fewer: blanking those would blank parts of ordinary words instead.
 */
export function secretsOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    return [
      safeDecode(parsed.password),
      parsed.password,
      parsed.searchParams.get('password') ?? '',
    ].filter((secret) => secret.length > 3);
  } catch {
    return [];
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
