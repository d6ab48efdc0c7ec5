import { describeRedisError, secretsOf } from './redis-refusal';

const DENIED =
  "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface";

describe('describeRedisError', () => {
  it('names each refusal, says what to do, and quotes Redis up to the end of a sentence', () => {
    expect(describeRedisError(new Error(DENIED), [])).toEqual({
      refusal: 'DENIED',
      text: 'refused: protected mode (DENIED): with no password set, Redis serves only its own host; set one (requirepass) and give it in VM_FLEET_REDIS_URL (redis://:<password>@host:6379/0); Redis said: "Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface."',
    });
    expect(describeRedisError(new Error('NOAUTH Authentication required.'), [])).toMatchObject({
      refusal: 'NOAUTH',
      text: expect.stringMatching(
        /^refused: a password is required \(NOAUTH\);.*; Redis said: "Authentication required\."$/,
      ),
    });
    expect(
      describeRedisError(
        new Error('WRONGPASS invalid username-password pair or user is disabled.'),
        [],
      ),
    ).toMatchObject({ refusal: 'WRONGPASS', text: expect.stringContaining('(WRONGPASS)') });
    expect(
      describeRedisError(
        new Error(
          "READONLY You can't write against a read only replica. script: bd6f3018b28bbdb36260f19d3c44afed740db987, on @user_script:1.",
        ),
        [],
      ),
    ).toEqual({
      refusal: 'READONLY',
      text: 'refused: a read-only replica (READONLY), as after a failover; point VM_FLEET_REDIS_URL at the primary; Redis said: "You can\'t write against a read only replica."',
    });
  });

  it("finds the refusal in the client's ready-check failure", () => {
    expect(
      describeRedisError(new Error('Ready check failed: NOAUTH Authentication required.'), []),
    ).toMatchObject({ refusal: 'NOAUTH' });
  });

  it('passes anything else as it came, on one line, bounded, without the password', () => {
    expect(describeRedisError(new Error('connect ECONNREFUSED 10.8.0.5:6379'), [])).toEqual({
      text: 'connect ECONNREFUSED 10.8.0.5:6379',
    });
    expect(
      describeRedisError(new Error('ERR AUTH hunter2-secret\r\ncalled'), ['hunter2-secret']),
    ).toEqual({ text: 'ERR AUTH *** called' });
    expect(describeRedisError(new Error('x'.repeat(1_000)), []).text).toHaveLength(403);
  });
});

describe('secretsOf', () => {
  it("takes the URL's password, as written and decoded, and one in its query", () => {
    expect(secretsOf('redis://:p%40ss-word@10.8.0.5:6379/0')).toEqual(['p@ss-word', 'p%40ss-word']);
    expect(secretsOf('rediss://user:longpass@h/0?password=other-pass')).toEqual([
      'longpass',
      'longpass',
      'other-pass',
    ]);
    expect(secretsOf('redis://10.8.0.5:6379')).toEqual([]);
  });
});
