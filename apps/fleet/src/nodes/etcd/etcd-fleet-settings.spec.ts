import { ConfigurationError } from '@app/daemon';
import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeEtcd } from '../../../../../test/support/fake-etcd';
import { FleetWideSetting, SETTINGS_PREFIX, agreeOnFleetSetting } from './etcd-fleet-settings';

const copies = (value: string): FleetWideSetting => ({
  variable: 'VM_FLEET_COPIES',
  value,
  valid: (stored) => /^[0-2]$/.test(stored),
  why: 'the agents fence by it',
});

describe('one VM_FLEET_COPIES per etcd fleet', () => {
  let etcd: FakeEtcd;

  beforeEach(() => {
    etcd = new FakeEtcd(new FakeClock());
  });

  it('is written by the first controller to start, and taken from any other with the same value', async () => {
    await agreeOnFleetSetting(etcd, copies('2'));
    expect(etcd.get(`${SETTINGS_PREFIX}VM_FLEET_COPIES`)).toBe('2');
    await expect(agreeOnFleetSetting(etcd, copies('2'))).resolves.toBeUndefined();
    expect(etcd.get(`${SETTINGS_PREFIX}VM_FLEET_COPIES`)).toBe('2');
  });

  it('refuses a controller with another value, naming the variable, both values and the fix, and leaves the fleet value', async () => {
    await agreeOnFleetSetting(etcd, copies('1'));
    const refusal = agreeOnFleetSetting(etcd, copies('0'));
    await expect(refusal).rejects.toBeInstanceOf(ConfigurationError);
    await expect(refusal).rejects.toThrow(
      "VM_FLEET_COPIES is 0 here but 1 for this fleet (ppn-fleet/settings/VM_FLEET_COPIES in etcd, written by the first controller to start on it): every controller on one etcd must have the same value (the agents fence by it). Set VM_FLEET_COPIES=1 here, or, to change the fleet's value, stop every controller, run `etcdctl del ppn-fleet/settings/VM_FLEET_COPIES`, then start them all with the new value",
    );
    expect(etcd.get(`${SETTINGS_PREFIX}VM_FLEET_COPIES`)).toBe('1');
  });

  it('lets exactly one of two controllers starting at once decide', async () => {
    const outcomes = await Promise.allSettled([
      agreeOnFleetSetting(etcd, copies('1')),
      agreeOnFleetSetting(etcd, copies('2')),
    ]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const kept = etcd.get(`${SETTINGS_PREFIX}VM_FLEET_COPIES`);
    expect(['1', '2']).toContain(kept);
    await expect(agreeOnFleetSetting(etcd, copies(kept!))).resolves.toBeUndefined();
  });

  it('never echoes a stored value it cannot read', async () => {
    await etcd.txn([], [{ put: { key: `${SETTINGS_PREFIX}VM_FLEET_COPIES`, value: 'x<script>' } }]);
    const refusal = agreeOnFleetSetting(etcd, copies('1'));
    await expect(refusal).rejects.toThrow(
      /^VM_FLEET_COPIES: etcd's ppn-fleet\/settings\/VM_FLEET_COPIES holds no value this controller can read; to set the fleet's value, stop every controller/,
    );
    await expect(refusal).rejects.not.toThrow(/script/);
  });

  it('fails as the store does when etcd is down (the start names VM_FLEET_ETCD_ENDPOINTS)', async () => {
    etcd.down = true;
    await expect(agreeOnFleetSetting(etcd, copies('1'))).rejects.toThrow(/unavailable/);
  });
});
