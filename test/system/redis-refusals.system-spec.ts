import {
  Daemon,
  FLEET_URL,
  eventually,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

jest.setTimeout(60_000);

const PASSWORD = 'fleet-redis-pw-0123456789';

async function controllerOn(redisUrl: string): Promise<Daemon> {
  const daemon = startFleetDaemon({ VM_FLEET_REDIS_URL: redisUrl });
  await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  return daemon;
}

/** The message of the 503 `path` answers (POST with a heartbeat, else GET), once it is one. */
function unavailable(path: string): Promise<string> {
  return eventually(
    `a 503 from ${path}`,
    async () => {
      const response = await fetch(`${FLEET_URL}${path}`, {
        method: path === '/v1/nodes/heartbeat' ? 'POST' : 'GET',
        headers: { 'content-type': 'application/json' },
        body:
          path === '/v1/nodes/heartbeat' ? JSON.stringify(heartbeat({ node_id: 'n1' })) : undefined,
      });
      const body = (await response.json()) as { message?: string };
      return response.status === 503 ? body.message : undefined;
    },
    10_000,
  );
}

/**
 * A Redis that answers but will not serve the controller (Redis 7, real redis-server): the log
 * line and every 503 name the refusal, say what to do and quote Redis, never the password.
 */
describe('a Redis that refuses the controller says why', () => {
  afterEach(async () => {
    await stopAllDaemons();
    await stopAllRedisServers();
  });

  it('NOAUTH: it needs a password and the URL has none', async () => {
    const redis = await RedisServer.start(undefined, [], ['--requirepass', PASSWORD]);
    const fleet = await controllerOn(redis.url);
    await fleet.waitForOutput(
      /Redis at redis:\/\/127\.0\.0\.1:\d+ unreachable \(refused: a password is required \(NOAUTH\); give it in VM_FLEET_REDIS_URL \(redis:\/\/:<password>@host:6379\/0\); Redis said: "Authentication required\."\)/,
    );
    expect(await unavailable('/v1/nodes')).toMatch(
      /^fleet state store \(Redis at redis:\/\/127\.0\.0\.1:\d+\) unavailable: refused: a password is required \(NOAUTH\);.*Redis said: "Authentication required\."$/,
    );
    // Said once, not at every reconnection.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(fleet.output.match(/NOAUTH/g)).toHaveLength(1);
  });

  it('WRONGPASS: the password is wrong, and neither password is ever shown', async () => {
    const redis = await RedisServer.start(undefined, [], ['--requirepass', PASSWORD]);
    const wrong = 'not-the-password-9876';
    const fleet = await controllerOn(`redis://:${wrong}@127.0.0.1:${redis.port}/0`);
    await fleet.waitForOutput(/unreachable \(refused: wrong password or user \(WRONGPASS\)/);
    const message = await unavailable('/v1/fleet');
    expect(message).toContain('(WRONGPASS)');
    expect(message).toContain('Redis said: "invalid username-password pair');
    for (const secret of [wrong, PASSWORD]) {
      expect(message).not.toContain(secret);
      expect(fleet.output).not.toContain(secret);
    }
  });

  it('takes the password in the URL as the README shows it: redis://:<password>@host', async () => {
    const redis = await RedisServer.start(undefined, [], ['--requirepass', PASSWORD]);
    const fleet = await controllerOn(`redis://:${PASSWORD}@127.0.0.1:${redis.port}/0`);
    await fleet.waitForOutput(/Redis at redis:\/\/127\.0\.0\.1:\d+\/0 connected/);
    const response = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(heartbeat({ node_id: 'n1' })),
    });
    expect(response.status).toBe(200);
    expect(fleet.output).not.toContain(PASSWORD);
  });

  it('DENIED: protected mode, with no password, reached from another address than loopback', async () => {
    const host = TestHost.create('ppn-refuse', 21);
    try {
      const redis = await RedisServer.start(
        undefined,
        [host.hostAddress],
        ['--protected-mode', 'yes'],
      );
      const fleet = await controllerOn(`redis://${host.hostAddress}:${redis.port}/0`);
      await fleet.waitForOutput(
        /unreachable \(refused: protected mode \(DENIED\): with no password set, Redis serves only its own host; .*Redis said: "Redis is running in protected mode/,
      );
      expect(await unavailable('/v1/nodes')).toMatch(
        /unavailable: refused: protected mode \(DENIED\).*Redis said: "Redis is running in protected mode because protected mode is enabled and no password is set for the default user\./,
      );
    } finally {
      host.remove();
    }
  });

  it('READONLY: a replica, as the old primary is after a failover; reads still work', async () => {
    const primary = await RedisServer.start();
    const replica = await RedisServer.start(
      undefined,
      [],
      ['--replicaof', '127.0.0.1', String(primary.port)],
    );
    const fleet = await controllerOn(replica.url);
    await fleet.waitForOutput(/Redis at .* connected/);
    expect(await unavailable('/v1/nodes/heartbeat')).toMatch(
      /unavailable: refused: a read-only replica \(READONLY\), as after a failover; point VM_FLEET_REDIS_URL at the primary; Redis said: "You can't write against a read only replica\."$/,
    );
    await fleet.waitForOutput(
      /WARN.*Redis at redis:\/\/127\.0\.0\.1:\d+ refused: a read-only replica \(READONLY\).*; state routes that write answer 503 until it is fixed/,
    );
    const listing = await fetch(`${FLEET_URL}/v1/nodes`);
    expect(listing.status).toBe(200);
    // Logged once a minute, not at every refused write.
    await unavailable('/v1/nodes/heartbeat');
    expect(fleet.output.match(/READONLY/g)).toHaveLength(1);
  });
});

/**
 * A Redis that serves anyone: whoever reaches it rewrites fleet state without the API token (a
 * tenant's VM did, through QEMU's user network). The controller says so at start, naming the
 * variable to fix.
 */
describe('a Redis that runs commands without credentials is named at start', () => {
  afterEach(async () => {
    await stopAllDaemons();
    await stopAllRedisServers();
  });

  const WARNING =
    /Redis at redis:\/\/127\.0\.0\.1:\d+\/?0? runs commands without credentials: .*bypassing VM_FLEET_API_TOKEN\. Require a password or an ACL user in Redis .* give it in VM_FLEET_REDIS_URL \(rediss:\/\/user:password@host:6379\/0\)/;

  it('with no password in VM_FLEET_REDIS_URL and none required', async () => {
    const redis = await RedisServer.start();
    const fleet = await controllerOn(redis.url);
    await fleet.waitForOutput(WARNING);
  });

  it('with an ACL user in VM_FLEET_REDIS_URL, while its default user still needs none; never showing the password', async () => {
    const redis = await RedisServer.start(
      undefined,
      [],
      ['--user', 'fleet', 'on', `>${PASSWORD}`, '~*', '&*', '+@all'],
    );
    const fleet = await controllerOn(`redis://fleet:${PASSWORD}@127.0.0.1:${redis.port}/0`);
    await fleet.waitForOutput(WARNING);
    expect(fleet.output).not.toContain(PASSWORD);
  });
});
