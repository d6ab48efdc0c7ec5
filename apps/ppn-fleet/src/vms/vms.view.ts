import { isIP } from 'node:net';
import type { FleetVm, NodeRecord } from '../api/fleet-api.client';
import { printable } from '../terminal/printable';
import { Cell, formatTable } from '../terminal/table';
import type { Style } from '../terminal/style';
import { ListedVm, describeVmState, lifeCycleOf } from './vm-life-cycle.view';
import { formatForwards, publishesPorts } from './vm-ports.view';
import { copyAgeCell, showsCopies } from './vm-copies.view';

/** The base image's default user, whom a VM's SSH target names unless told otherwise. */
export const DEFAULT_SSH_USER = 'debian';

const STATE_STYLES: Record<string, Style> = {
  Running: 'green',
  Provisioning: 'yellow',
  Stopped: 'dim',
  Error: 'red',
};

/** `state` coloured by what it is; `text`: the words shown, the state itself by default. */
export function stateCell(state: string, text = printable(state)): Cell {
  return { text, style: STATE_STYLES[state] };
}

/**
 * How the VM runs: kvm, tcg (emulation, slower: dim yellow), or `-` before its start or from a
 * controller or agent that does not report it.
 */
export function accelCell(vm: Pick<FleetVm, 'accel'>): Cell {
  const accel = vm.accel ?? null;
  if (accel === null) return { text: '-', style: 'dim' };
  return accel === 'tcg' ? { text: 'tcg', style: 'yellow' } : printable(accel);
}

/** The VM's forward of guest TCP port 22, if it has one. */
export function sshForward(vm: FleetVm): FleetVm['host_ports'][number] | undefined {
  return vm.host_ports.find((port) => port.guest_port === 22 && port.protocol === 'tcp');
}

/**
 * How to reach the VM's SSH: `ssh -p <host_port> <user>@<wg_ip>` when it forwards TCP port 22
 * and its node (hence its WireGuard address) is listed; undefined otherwise. Operators paste it
 * into a shell, so it is made only of an IP address and a port number the API gave: anything
 * else (`;`, a space, an escape) gives no target at all. A VM with node_silent_since gets none
 * either: its node id may be live again, but heartbeated by another machine (a cloned
 * VM_NODE_ID, another VM_DISK_DIR), whose wg_ip is not where the VM runs. Nor does a VM that is
 * not Running (`state`: the listing's, or its life cycle's when the operations listener gave
 * one): a Stopped or Error VM has no QEMU behind its port, and a Provisioning one no guest yet.
 */
export function sshTarget(
  vm: FleetVm,
  wgIp: string | undefined,
  user: string,
  state: string = vm.state,
): string | undefined {
  if (vm.node_silent_since !== undefined || state !== 'Running') return undefined;
  const forward = sshForward(vm);
  if (forward === undefined || wgIp === undefined || isIP(wgIp) === 0) return undefined;
  const port = forward.host_port;
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return undefined;
  return `ssh -p ${port} ${user}@${wgIp}`;
}

/**
 * GET /v1/vms as a table, with each VM's node and SSH target (nodes from GET /v1/nodes); a VM
 * with its life cycle (the operations listener's listing) shows its desired state where it
 * differs (see describeVmState; `nowMs` for how soon a restart is due).
 */
export function formatVms(
  vms: ListedVm[],
  nodes: NodeRecord[],
  sshUser: string,
  colour: boolean,
  nowMs = 0,
): string {
  if (vms.length === 0) return 'no VMs';
  const wgIps = new Map(nodes.map((node) => [node.node_id, node.wg_ip]));
  // PORTS only once a VM publishes more than SSH: a fleet without published ports looks as before.
  const withPorts = vms.some(publishesPorts);
  // COPY only once the controller shows copies: a fleet before copies looks as before.
  const withCopies = showsCopies(vms);
  return formatTable(
    [
      { header: 'VM' },
      { header: 'TYPE' },
      { header: 'STATE' },
      { header: 'RAM', align: 'right' },
      { header: 'VCPUS', align: 'right' },
      { header: 'ACCEL' },
      { header: 'TENANT' },
      { header: 'NODE' },
      { header: 'SSH' },
      ...(withPorts ? [{ header: 'PORTS' }] : []),
      ...(withCopies ? [{ header: 'COPY', align: 'right' as const }] : []),
    ],
    vms.map((vm) => [
      { text: printable(vm.vm_id), style: 'cyan' },
      printable(vm.vm_type),
      stateCell(lifeCycleOf(vm)?.state ?? vm.state, describeVmState(vm, nowMs)),
      `${vm.ram_alloc_mb} MB`,
      String(vm.vcpu_count),
      accelCell(vm),
      vm.tenant_id === null || vm.tenant_id === undefined
        ? { text: '-', style: 'dim' }
        : printable(vm.tenant_id),
      // A silent VM is as it was last reported, and nothing manages it: its node dropped out, or
      // its node id is heard again from an agent that no longer lists it (another machine).
      vm.node_silent_since === undefined
        ? printable(vm.node_id)
        : {
            text: `${printable(vm.node_id)} ${wgIps.has(vm.node_id) ? '(not listed by its agent)' : '(dropped)'}`,
            style: 'red',
          },
      sshTarget(vm, wgIps.get(vm.node_id), sshUser, lifeCycleOf(vm)?.state ?? vm.state) ?? {
        text: '-',
        style: 'dim',
      },
      ...(withPorts ? [formatForwards(vm, wgIps.get(vm.node_id)) || '-'] : []),
      ...(withCopies ? [copyAgeCell(vm, nowMs)] : []),
    ]),
    colour,
  );
}
