import { ConfigurationError } from '@app/daemon';
import { EtcdClient } from './etcd.client';

/** One key per fleet-wide setting: `ppn-fleet/settings/<variable>`, its value as written. */
export const SETTINGS_PREFIX = 'ppn-fleet/settings/';

/** The etcd calls the agreement uses: the client, or a test's in-memory etcd. */
export type SettingsEtcd = Pick<EtcdClient, 'txn'>;

/**
 * A setting every controller of one etcd fleet must share, as this controller has it:
 * `variable`'s value, and `valid` telling a stored value this version can read.
 */
export interface FleetWideSetting {
  variable: string;
  value: string;
  valid: (stored: string) => boolean;
  /** Why the controllers must agree, for the error (e.g. "the agents fence ..."). */
  why: string;
}

/**
 * Makes `setting` the fleet's, or checks this controller agrees with it: in one txn, writes it
 * under SETTINGS_PREFIX if no controller did yet (the first to start on this etcd decides),
 * else reads what is there. A different value is a ConfigurationError naming the variable,
 * both values and how to fix it, so a controller never runs beside others with another one
 * (VM_FLEET_COPIES: the agents fence with whichever controller answered them, recovery
 * restores with the leader's, and two of them disagreeing could run one VM twice).
 */
export async function agreeOnFleetSetting(
  etcd: SettingsEtcd,
  setting: FleetWideSetting,
): Promise<void> {
  const key = SETTINGS_PREFIX + setting.variable;
  const result = await etcd.txn(
    [{ key, target: 'CREATE', result: 'EQUAL', revision: 0 }],
    [{ put: { key, value: setting.value } }],
    [{ range: { key } }],
  );
  if (result.succeeded) return;
  const stored = result.ranges[0]?.[0]?.value;
  if (stored === setting.value) return;
  const fix = `stop every controller, run \`etcdctl del ${key}\`, then start them all with the new value`;
  if (stored === undefined || !setting.valid(stored)) {
    // Never echoed: whatever is there was not written by a controller.
    throw new ConfigurationError(
      `${setting.variable}: etcd's ${key} holds no value this controller can read; to set the fleet's value, ${fix}`,
    );
  }
  throw new ConfigurationError(
    `${setting.variable} is ${setting.value} here but ${stored} for this fleet (${key} in etcd, written by the first controller to start on it): every controller on one etcd must have the same value (${setting.why}). Set ${setting.variable}=${stored} here, or, to change the fleet's value, ${fix}`,
  );
}
