import { loadavg } from 'node:os';
import { join } from 'node:path';
import { eventually } from './daemons';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from './guest-ssh';
import { HA_COPY_EVERY_S, HaFleet, HaMachine } from './ha-fleet';
import { QemuWatch } from './ha-watch';

/** A VM as the controllers list it (GET /v1/vms). */
export interface HaListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
  copied_at?: string | null;
  copy_node_id?: string | null;
}

/** How long a copy of the guest's disk may take to be listed after the last one (loaded 2 cores). */
export const COPY_WAIT_MS = 240_000;

export async function listedVm(fleet: HaFleet, vmId: string): Promise<HaListedVm | undefined> {
  return (await fleet.getJson<HaListedVm[]>('/v1/vms')).find(({ vm_id }) => vm_id === vmId);
}

/** The VM's SSH port (its published port to guest port 22). */
export function sshPortOf(vm: HaListedVm): number {
  const ssh = vm.host_ports.find(({ guest_port }) => guest_port === 22) ?? vm.host_ports[0];
  return ssh.host_port;
}

/**
 * A protected VM (one copy, every 30 s) of the guest image created on `node` through `through`'s
 * controller, running and answering SSH; resolves with its listing once SSH answered.
 */
export async function protectedGuest(
  fleet: HaFleet,
  through: HaMachine,
  node: HaMachine,
): Promise<HaListedVm> {
  const createdAt = Date.now();
  const created = await fleet.cli(through, [
    ...['vm', 'create', '--type', 'ha', '--ram', '512', '--vcpus', '1', '--node', node.nodeId],
    ...['--copies', '1', '--copy-every', String(HA_COPY_EVERY_S), '--json'],
  ]);
  if (created.code !== 0) throw new Error(`vm create exited ${created.code}: ${created.stderr}`);
  const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
  const vm = await eventually(
    `${vmId} running`,
    async () => {
      const listed = await listedVm(fleet, vmId);
      return listed?.state === 'Running' && listed.host_ports.length > 0 ? listed : undefined;
    },
    120_000,
    250,
  );
  await guestSsh(fleet, node, vm, 'true', createdAt);
  return vm;
}

/** `command`'s output in the guest on `node` once SSH answers there (deadline from `since`). */
export function guestSsh(
  fleet: HaFleet,
  node: HaMachine,
  vm: HaListedVm,
  command: string,
  since = Date.now(),
  deadlineMs = GUEST_SSH_DEADLINE_MS,
): Promise<string> {
  return sshOnceUp(fleet.key, node.host.address, sshPortOf(vm), command, {
    since,
    deadlineMs,
    serialLog: join(node.diskDir, 'run', vm.vm_id, 'serial.log'),
  });
}

/** Resolves with the listing once a copy whose point in time is after `after` is listed. */
export function copiedAfter(fleet: HaFleet, vmId: string, after: number): Promise<HaListedVm> {
  return eventually(
    `a copy of ${vmId} taken after ${new Date(after).toISOString()}`,
    async () => {
      const vm = await listedVm(fleet, vmId);
      return vm?.copy_node_id && vm.copied_at && Date.parse(vm.copied_at) > after ? vm : undefined;
    },
    COPY_WAIT_MS,
    500,
  );
}

/** Resolves with the listing once the VM runs on a node other than `from`. */
export function runningElsewhere(
  fleet: HaFleet,
  vmId: string,
  from: string,
  timeoutMs: number,
): Promise<HaListedVm> {
  return eventually(
    `${vmId} running on a node other than ${from}`,
    async () => {
      const vm = await listedVm(fleet, vmId);
      return vm && vm.node_id !== from && vm.state === 'Running' ? vm : undefined;
    },
    timeoutMs,
    250,
  );
}

/** What losing a machine whole did to its protected VM, as an operator would measure it. */
export interface MachineLoss {
  vmId: string;
  lostNode: string;
  /** Where the VM runs again. */
  node: string;
  /** The leading controller after the kill (the lost machine's was leading before it). */
  leaderAfter: string;
  killToRunningS: number;
  killToSshS: number;
  /** The age of the copy used when the leader recovered the VM (its log): the data lost. */
  copyAgeS: number;
  /** The recovery's generation, from the leader's log. */
  generation: number;
  /** `sha256sum` of a file written and synced before the last copy, before and after. */
  fileBefore: string;
  fileAfter: string;
  portsBefore: HaListedVm['host_ports'];
  portsAfter: HaListedVm['host_ports'];
  /** `ppn-fleet vm copies <vm>` through the surviving controller, after. */
  copiesOutput: string;
  /** Each moment two QEMU processes of the VM ran at once (none expected). */
  overlaps: QemuWatch['overlaps'];
  /** The nodes the VM's QEMU processes ran on, in order of their start (a node once per run). */
  qemuNodes: string[];
  /** /proc/loadavg's 1 min figure at the kill and once SSH answered. */
  load: [number, number];
}

/**
 * Issue 36's first trial: a protected guest on the machine of the leading controller, a file
 * written and synced in it, a copy taken after that; then the machine killed whole and, nobody
 * acting, the VM waited for on another machine until its SSH answers.
 */
export async function loseMachine(fleet: HaFleet, goalMs: number): Promise<MachineLoss> {
  const doomed = await fleet.leader();
  const vm = await protectedGuest(fleet, doomed, doomed);
  const watch = new QemuWatch(fleet.workDir, vm.vm_id, (args) => fleet.nodeOfQemu(args));
  try {
    const probe = 'sha256sum ~/kept';
    const fileBefore = await guestSsh(
      fleet,
      doomed,
      vm,
      `head -c 1048576 /dev/urandom > ~/kept && sync && ${probe}`,
    );
    await copiedAfter(fleet, vm.vm_id, Date.now());

    const survivor = fleet.controllerMachines().find((machine) => machine !== doomed)!;
    const loadAtKill = loadavg()[0];
    const killedAt = Date.now();
    await fleet.kill(doomed);
    const leader = await fleet.leader(30_000);
    const recovered = await runningElsewhere(fleet, vm.vm_id, doomed.nodeId, goalMs);
    const runningAt = Date.now();
    const fileAfter = await guestSsh(fleet, fleet.machine(recovered.node_id), recovered, probe);
    const sshAt = Date.now();
    const logged = new RegExp(
      `vm ${vm.vm_id} recovered on node \\S+ from .*\\(copy age (\\d+) s\\), generation (\\d+)`,
    ).exec(leader.controller!.output);
    const copies = await fleet.cli(survivor, ['vm', 'copies', vm.vm_id]);
    return {
      vmId: vm.vm_id,
      lostNode: doomed.nodeId,
      node: recovered.node_id,
      leaderAfter: leader.nodeId,
      killToRunningS: (runningAt - killedAt) / 1000,
      killToSshS: (sshAt - killedAt) / 1000,
      copyAgeS: Number(logged?.[1] ?? NaN),
      generation: Number(logged?.[2] ?? NaN),
      fileBefore,
      fileAfter,
      portsBefore: vm.host_ports,
      portsAfter: recovered.host_ports,
      copiesOutput: `${copies.stdout}${copies.stderr}`,
      overlaps: watch.overlaps,
      qemuNodes: [...watch.lives.values()]
        .sort((a, b) => a.firstSeen - b.firstSeen)
        .map(({ nodeId }) => nodeId)
        // A daemonizing QEMU is seen as its parent, then as its child: one start.
        .filter((nodeId, index, nodes) => nodeId !== nodes[index - 1]),
      load: [loadAtKill, loadavg()[0]],
    };
  } finally {
    watch.stop();
  }
}
