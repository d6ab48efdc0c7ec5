// Generated from openapi/fleet-ops.openapi.json by `npm run openapi`. Do not edit.
export interface paths {
  '/v1/node-disks': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The live nodes' disk room for VM disks
     * @description Each live node (as GET /v1/nodes lists them, by node_id) with VM_DISK_DIR's room as its last heartbeat reported it: what `ppn-fleet status` shows as DISK.
     */
    get: operations['listNodeDisks'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/nodes/{node_id}/declare-dead': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Recover a lost node now, without waiting for VM_FLEET_RECOVER_AFTER_S
     * @description etcd mode: marks the node for recovery, so the leader restores each of its protected VMs (copies count 1 or 2) from its freshest copy on another live node at its next pass, raising its generation, instead of VM_FLEET_RECOVER_AFTER_S after its last lease renewal. Refused (409) while its lease is live: a node that still renews it may still run its VMs. Nothing is asked of any agent here.
     */
    post: operations['declareNodeDead'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/nodes/{node_id}/drain': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * A node's drain: whether it is drained, since when, each VM's outcome so far
     * @description What `node drain` did or is doing, from the fleet's store (so any controller answers it): whether the node is drained, since when, each VM's outcome in the order each ended (kept until `undrain`), and the VMs its agent still lists.
     */
    get: operations['getNodeDrain'];
    put?: never;
    /**
     * Drain a node for maintenance: placement passes it over, its VMs moved off it
     * @description Marks the node drained (kept in the fleet's store, so every controller and a restarted one agree; its :9203 record is unchanged and it stays enrolled and listed): placement passes it over, saying why, for creates, moves, restores and recoveries. Then moves each VM its agent lists off it, two at a time, Running ones first: live when Running, cold when Stopped, placement choosing the node (as `vm move` without `to`). A VM that cannot move (no room on any other node, not Running or Stopped, a failed move) stays where it is, as it was, and its outcome says why. Answers once every VM was tried, with each one's outcome. Drained already: its VMs still listed are tried again (idempotent). `undrain` ends it.
     */
    post: operations['drainNode'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/nodes/{node_id}/undrain': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * End a drain: placement may choose the node again
     * @description Clears the drained mark (idempotent: a node not drained answers the same). A drain under way takes no further VM; VMs moved off stay where they went.
     */
    post: operations['undrainNode'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * VMs on the nodes with their life cycles, optionally of one tenant
     * @description Every VM as the API's GET /v1/vms lists it, each with its life cycle from its node's agent: life_cycle is null for a VM whose agent did not answer usably in time, or which no live agent manages (node_silent_since). The agents are asked at most once per 2 s (or 4 times what the last asking took, when longer), 16 at a time, all within 3 s, and every reader in between shares that answer: a life cycle may be that old, but for an action's outcome taken meanwhile.
     */
    get: operations['listVmsWithLifeCycles'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * One VM with its life cycle
     * @description The VM as the listing shows it, its life cycle asked of its node's agent (null as in the listing). What `ppn-fleet vm stop|start|restart --wait` follows.
     */
    get: operations['getVm'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/backups': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The VM's backups on its node, newest first
     * @description Read by the agent of the VM's node from its VM_BACKUP_DIR: each backup (a file of a qcow2 chain, full or incremental), where, when and how large; the backup under way and the last failure.
     */
    get: operations['listVmBackups'];
    put?: never;
    /**
     * Have the VM's node back it up to its VM_BACKUP_DIR now
     * @description Sent to the agent of the VM's node, which answers at once (in_progress_since set) and copies the VM after any other backup under way there: a running VM by QEMU while it runs (full, or the clusters written since its chain's last backup), a stopped one from its file. GET .../backups shows it once taken, or last_error.
     */
    post: operations['backUpVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/console': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * A part of the VM's serial console
     * @description Read by the agent of the VM's node from the VM's console log, as printable text. Without from, the last max_bytes; a follower passes the last answer's next as from (reset says the log began again, a new boot).
     */
    get: operations['readVmConsole'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/copies': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The VM's copies on other nodes and its backups
     * @description Its copy policy (as its agent reports it), every copy of it the live nodes other than its own say they hold (their heartbeats' replicas; freshest first), and its backups in its node's VM_BACKUP_DIR, asked of that node's agent. The agent silent, unreachable or failing: backups is null and backups_unread says why; the copies are shown all the same.
     */
    get: operations['listVmCopies'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/move': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Move a VM to another node: live when it runs, cold when stopped
     * @description A Running VM moves live: its disk mirrored to the new node over NBD (every write reaching both until the end), its memory migrated, the guest paused only for the switchover (it does not reboot). A Stopped VM moves cold: its disk file sent; it stays stopped. Both nodes' QEMU must offer the VM's machine type, CPU model and accelerator (refused, naming what differs, otherwise). `to` absent: placement chooses among the live nodes but its own (refused with its reasons when none fits); the new node's RAM is held as for a create. The VM keeps its id, tenant, size, desired state, copies policy and published ports (the same host ports where free there, else new ones). Its old node keeps its disk until the new node reported the VM in a heartbeat, then removes it; a move that fails before the new node runs it leaves it running on its old node. Answers once it is there, with the pause, the time taken and the bytes sent.
     */
    post: operations['moveVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/restart': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Have the VM's node restart it
     * @description Sent to the agent of the VM's node: without force, stopped as a stop does (timeout_s) and started again in a new process; with force, reset in place at once. The answer is the life cycle as the restart began (operation restarting).
     */
    post: operations['restartVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/restore': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Bring a VM back from a copy or a backup, on a node of your choice
     * @description Restores the VM from `from`: a node id (the copy that node holds of it), or a backup id (`<chain_id>/<index>`, or a chain id for its newest file) in the VM_BACKUP_DIR of the node named by `to` (a backup of any VM: a folder copied there from a dead node is read the same); absent, the freshest copy on any live node (or, with `to`, the copy that node holds, else the newer of its newest backup and the freshest copy on another live node). `at`: the newest file taken at or before it. `to` absent: the node holding the copy; `to` a node that does not hold it: that node's agent pulls the copy from its holder first (a short-lived read grant signed with the holder's token, the chain checked against its manifest and with qemu-img in a private staging folder before it becomes the VM's disk). The VM keeps its id (its guest sees the same instance: same host keys), tenant, size and published ports (the same host ports where free on that node, else new ones). A VM a live node lists is refused (409) unless `as_new` (a new id, new ports, beside the original). The target's RAM is held as for a create. Once its agent made the VM, it is listed on that node only, and the node it was on, should it come back, is told in its heartbeat answer (superseded_vm_ids) to stop it and set its disk aside.
     */
    post: operations['restoreVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/start': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Have the VM's node start it again
     * @description Sent to the agent of the VM's node, which starts the stopped VM (its desired state becomes running again). The answer is the life cycle as the start began (operation starting); a 422 when the node has no room for it now.
     */
    post: operations['startVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/stop': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Have the VM's node stop it, and keep it stopped
     * @description Sent to the agent of the VM's node: the guest is asked to power down (ACPI) and QEMU is ended after timeout_s, or at once with force. The VM's desired state becomes stopped: its agent does not start it again after a reboot or crash. The stop goes on on the node; the answer is the life cycle as it began (operation stopping).
     */
    post: operations['stopVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
export interface components {
  schemas: {
    CopyPolicy: {
      /**
       * @description Copies of the VM kept on other nodes (each on a different node); 0: none.
       * @example 1
       */
      count: number;
      /**
       * @description Seconds between two copies of the running VM (a stopped VM is copied once).
       * @example 60
       */
      every_s: number;
    };
    DeclaredDeadNode: {
      /**
       * Format: date-time
       * @description When a controller last renewed its lease; null when etcd keeps no such time.
       * @example 2026-08-06T12:00:00.000Z
       */
      last_renewed_at: string | null;
      /** @example example-node-01 */
      node_id: string;
      /**
       * @description Its protected VMs (copies count 1 or 2) the controllers know of: the leader restores each from its freshest copy on another live node at its next pass (every 5 s), once the node is no longer listed live (30 s after its last heartbeat).
       * @example [
       *       "vm-0123456789abcdef"
       *     ]
       */
      protected_vm_ids: string[];
    };
    /**
     * @description running from the create on, stopped once an operator stops it, running again once started; kept with the VM on its node across agent restarts and reboots.
     * @enum {string}
     */
    DesiredVmState: 'running' | 'stopped';
    DrainedVm: {
      /** @description Why it was left or failed (the move's refusal, placement's reasons); null when moved. */
      message: string | null;
      /**
       * @example live
       * @enum {string|null}
       */
      mode: 'live' | 'cold' | null;
      /**
       * @description moved: it runs (or sits stopped) on `to_node_id` now. left: it could not move (no room on any other node, not Running or Stopped) and is still on the drained node, as it was. failed: its move failed midway; it is left on the drained node.
       * @example moved
       * @enum {string}
       */
      outcome: 'moved' | 'left' | 'failed';
      /** @example n2 */
      to_node_id: string | null;
      /** @description How long its move took, in ms. */
      took_ms: number;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    ErrorBody: {
      /** @description The status's reason phrase, such as `Not Found`. */
      error: string;
      /** @description What went wrong, naming the field, header or id at fault. */
      message: string;
      /** @description The HTTP status again. */
      statusCode: number;
    };
    FleetVm: {
      /**
       * @description How the VM runs on its node: kvm (hardware virtualization) or tcg (QEMU's emulation, slower). Chosen by the node's agent (VM_ACCEL; prefer_kvm only steers placement), tcg when KVM failed there. Null while the VM has not (yet) been started, and from agents that do not report it.
       * @example kvm
       * @enum {string|null}
       */
      accel: 'kvm' | 'tcg' | null;
      /**
       * Format: date-time
       * @description When the VM's freshest copy on another node was taken (RFC 3339); null while it has none. Absent when the controller does not track copies.
       */
      copied_at?: string | null;
      /** @description The node holding that copy; null while there is none. */
      copy_node_id?: string | null;
      host_ports: components['schemas']['HostPort'][];
      /**
       * @description The node whose agent runs the VM. Its forwarded ports (host_ports) are reached at that node's wg_ip (GET /v1/nodes/{node_id}): ssh -p <host_port> <user>@<wg_ip>.
       * @example example-node-01
       */
      node_id: string;
      /**
       * Format: date-time
       * @description Only when no live agent manages the VM: its node has dropped out (silent for more than 30 s), or its node id heartbeats again from an agent that does not list it (another machine with the same node id: a cloned VM_NODE_ID, or the agent started on another VM_DISK_DIR). The last heartbeat that listed it (RFC 3339): the VM is as that heartbeat reported it, its agent is stopped or cut off, and its QEMU may still run. It stays listed with this field until an agent heartbeating with its node id lists it again; DELETE answers 409 meanwhile, or forgets the record with ?forget=true.
       * @example 2026-08-06T12:00:00.000Z
       */
      node_silent_since?: string;
      /** @example 2048 */
      ram_alloc_mb: number;
      /**
       * Format: date-time
       * @description When QEMU started it; null while it has not (yet) run. Never left out.
       * @example 2026-08-06T12:00:00.123456789Z
       */
      started_at: string | null;
      /** @example Running */
      state: components['schemas']['VmState'];
      /** @example example-tenant */
      tenant_id: string | null;
      /** @example 2 */
      vcpu_count: number;
      /** @example vm-0123456789abcdef */
      vm_id: string;
      /** @example web */
      vm_type: string;
    };
    FleetVmBackups: {
      /** @description Newest first. */
      backups: components['schemas']['VmBackup'][];
      /**
       * Format: date-time
       * @description When the backup under way began; null when none is.
       * @example null
       */
      in_progress_since: string | null;
      /**
       * @description Why this agent's last backup of the VM failed; null once one succeeded.
       * @example null
       */
      last_error: string | null;
      /**
       * @description The VM's node, whose VM_BACKUP_DIR holds these backups.
       * @example example-node-01
       */
      node_id: string;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    FleetVmWithLifeCycle: {
      /**
       * @description How the VM runs on its node: kvm (hardware virtualization) or tcg (QEMU's emulation, slower). Chosen by the node's agent (VM_ACCEL; prefer_kvm only steers placement), tcg when KVM failed there. Null while the VM has not (yet) been started, and from agents that do not report it.
       * @example kvm
       * @enum {string|null}
       */
      accel: 'kvm' | 'tcg' | null;
      /**
       * Format: date-time
       * @description When the VM's freshest copy on another node was taken (RFC 3339); null while it has none. Absent when the controller does not track copies.
       */
      copied_at?: string | null;
      /** @description The node holding that copy; null while there is none. */
      copy_node_id?: string | null;
      host_ports: components['schemas']['HostPort'][];
      /** @description The VM's life cycle as its node's agent answered just now (its desired state, an operation under way, restarts); null when the agent did not answer in time or usably, does not know the VM, or no live agent manages it (node_silent_since). */
      life_cycle: components['schemas']['VmLifeCycle'] | null;
      /**
       * @description The node whose agent runs the VM. Its forwarded ports (host_ports) are reached at that node's wg_ip (GET /v1/nodes/{node_id}): ssh -p <host_port> <user>@<wg_ip>.
       * @example example-node-01
       */
      node_id: string;
      /**
       * Format: date-time
       * @description Only when no live agent manages the VM: its node has dropped out (silent for more than 30 s), or its node id heartbeats again from an agent that does not list it (another machine with the same node id: a cloned VM_NODE_ID, or the agent started on another VM_DISK_DIR). The last heartbeat that listed it (RFC 3339): the VM is as that heartbeat reported it, its agent is stopped or cut off, and its QEMU may still run. It stays listed with this field until an agent heartbeating with its node id lists it again; DELETE answers 409 meanwhile, or forgets the record with ?forget=true.
       * @example 2026-08-06T12:00:00.000Z
       */
      node_silent_since?: string;
      /** @example 2048 */
      ram_alloc_mb: number;
      /**
       * Format: date-time
       * @description When QEMU started it; null while it has not (yet) run. Never left out.
       * @example 2026-08-06T12:00:00.123456789Z
       */
      started_at: string | null;
      /** @example Running */
      state: components['schemas']['VmState'];
      /** @example example-tenant */
      tenant_id: string | null;
      /** @example 2 */
      vcpu_count: number;
      /** @example vm-0123456789abcdef */
      vm_id: string;
      /** @example web */
      vm_type: string;
    };
    HeartbeatDiskRoom: {
      /**
       * @description What one more disk may still have at its virtual size: room_mb x overcommit - committed_mb.
       * @example 12288
       */
      committable_mb: number;
      /**
       * @description Every VM disk's virtual size together.
       * @example 28672
       */
      committed_mb: number;
      /**
       * @description VM_DISK_OVERCOMMIT: virtual sizes may add up to room_mb times this.
       * @example 1
       */
      overcommit: number;
      /**
       * @description Kept free beyond every disk: 5% of the file system, at most 2 GiB.
       * @example 2048
       */
      reserve_mb: number;
      /**
       * @description Room for VM disks: available now, plus what VM disks hold already, less the reserve.
       * @example 40960
       */
      room_mb: number;
    };
    HostPort: {
      /** @example 22 */
      guest_port: number;
      /** @example 22022 */
      host_port: number;
      /**
       * @example tcp
       * @enum {string}
       */
      protocol: 'tcp' | 'udp';
    };
    MoveVmRequest: {
      /**
       * @description The node the VM moves to; absent: placement chooses among the live nodes other than its own (refusing with its reasons when none fits).
       * @example example-node-01
       */
      to?: string;
    };
    MovedVm: {
      /** @description Bytes sent between the agents: the disk's and (live) the memory's. */
      bytes_sent: number;
      /**
       * @description The node it left.
       * @example example-node-01
       */
      from_node_id: string;
      /**
       * @example live
       * @enum {string}
       */
      mode: 'live' | 'cold';
      /**
       * @description Live: how long the guest was paused at the switchover, in ms, as its old node measured it (from the migration's pause to the new node running it). Null for a cold move.
       * @example 420
       */
      pause_ms: number | null;
      /** @description The whole move, in ms. */
      total_ms: number;
      vm: components['schemas']['FleetVm'];
    };
    NodeDiskRoom: {
      /** @description null: its agent reports none (an older agent, or VM_DISK_DIR unreadable). */
      disk_room: components['schemas']['HeartbeatDiskRoom'] | null;
      /** @example example-node-01 */
      node_id: string;
    };
    NodeDrain: {
      /** @description Whether the node is drained: placement passes it over (creates, moves, restores, recoveries) until `node undrain`. */
      drained: boolean;
      /** @example example-node-01 */
      node_id: string;
      /**
       * @description The VMs its live agent still lists (none once drained; any left said why in `vms`).
       * @example []
       */
      remaining_vm_ids: string[];
      /**
       * Format: date-time
       * @description When the drain began; null when the node is not drained.
       * @example 2026-08-06T12:00:00.000Z
       */
      since: string | null;
      /** @description What the latest drain did with each VM, in the order each ended (kept until `undrain`); a drain under way lists those done so far. */
      vms: components['schemas']['DrainedVm'][];
    };
    RestartVmRequest: {
      /**
       * @description true: end QEMU at once, without asking the guest to power down first.
       * @default false
       */
      force: boolean;
      /**
       * @description How long the guest has to power down after the ACPI request before QEMU is ended.
       * @default 60
       */
      timeout_s: number;
    };
    RestorePoint: {
      /** @example 20261205T041700Z-3f2a/0003 */
      backup_id: string;
      /** @enum {string} */
      kind: 'full' | 'incremental';
      /** @description This file's size on disk, in bytes. */
      size_bytes: number;
      /**
       * @description replica: the copy this node holds as a peer; backup: in this node's VM_BACKUP_DIR.
       * @enum {string}
       */
      source: 'replica' | 'backup';
      /** Format: date-time */
      taken_at: string;
    };
    RestoreVmRequest: {
      /**
       * @description Restore as a new VM (a new id, new host ports) beside the original, which may still run.
       * @default false
       */
      as_new: boolean;
      /**
       * Format: date-time
       * @description With a backup: the newest backup taken at or before this time.
       */
      at?: string;
      /**
       * @description Where to restore from: a node id (the copy that node holds) or a backup id (`<chain_id>/<index>`, from the backups of the node named by `to`). Absent: the freshest copy.
       * @example example-node-01
       */
      from?: string;
      /** @example example-node-01 */
      to?: string;
    };
    RestoredVm: {
      /** @description What it was restored from, on that node. */
      point: components['schemas']['RestorePoint'];
      /**
       * @description The node the VM was last listed on, which will not run it again (its agent sets it aside when it comes back); null when restored as new or never listed.
       * @example example-node-01
       */
      replaced_node_id: string | null;
      /** @description The VM as now listed, on its new node. */
      vm: components['schemas']['FleetVm'];
    };
    StopVmRequest: {
      /**
       * @description true: end QEMU at once, without asking the guest to power down first.
       * @default false
       */
      force: boolean;
      /**
       * @description How long the guest has to power down after the ACPI request before QEMU is ended.
       * @default 60
       */
      timeout_s: number;
    };
    VmBackup: {
      /**
       * @description The chain (its folder) and the file in it: `<chain_id>/<index>`.
       * @example 20261205T041700Z-3f2a/0001
       */
      backup_id: string;
      /**
       * @description full: the whole disk in one file; incremental: the clusters written since the chain's previous backup, in a file whose backing is that one.
       * @enum {string}
       */
      kind: 'full' | 'incremental';
      /**
       * @description The file on the node: `qemu-img convert -O qcow2 <path> disk.qcow2` makes the VM's whole disk as of taken_at from it and the files before it in its folder.
       * @example /mnt/usb/vm-backups/vm-0123456789abcdef/20261205T041700Z-3f2a/0001-incremental.qcow2
       */
      path: string;
      /** @description This file's size on disk, in bytes. */
      size_bytes: number;
      /** Format: date-time */
      taken_at: string;
    };
    VmBackups: {
      /** @description Newest first. */
      backups: components['schemas']['VmBackup'][];
      /**
       * Format: date-time
       * @description When the backup under way began; null when none is.
       * @example null
       */
      in_progress_since: string | null;
      /**
       * @description Why this agent's last backup of the VM failed; null once one succeeded.
       * @example null
       */
      last_error: string | null;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    VmConsole: {
      /** @description Byte offset of the first byte of text in the log of the current boot. */
      from: number;
      /** @description Byte offset to read from next (the log size when it was read). */
      next: number;
      /** @description true when the log restarted (a new boot) or older bytes than asked for are no longer there. */
      reset: boolean;
      /** @description Printable text: tabs and newlines kept, other control characters and terminal escapes left out, invalid UTF-8 replaced. */
      text: string;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    VmCopies: {
      /** @description The backups in the VM's node's VM_BACKUP_DIR, as its agent answered just now; null when they could not be read (backups_unread says why). */
      backups: components['schemas']['VmBackups'] | null;
      /**
       * @description Why backups is null: the VM's node is silent, its agent could not be reached or answered what its API does not give. The copies are shown all the same.
       * @example null
       */
      backups_unread: string | null;
      /**
       * Format: date-time
       * @description As GET /v1/vms shows it: the freshest copy sent by the VM's node and held on another live node; null while none is.
       */
      copied_at: string | null;
      /** @description Every copy of the VM held by a live node other than its own, freshest first; a copy whose source_node_id is not the VM's node was sent by a node that ran it before. */
      copies: components['schemas']['VmPeerCopy'][];
      /** @description The node holding it. */
      copy_node_id: string | null;
      /**
       * @description etcd mode: how many times the leader recovered the VM on another node (its generation, raised at each recovery); a node that ran an older generation never starts it again. Absent: never recovered, or not etcd mode.
       * @example 1
       */
      generation?: number;
      /**
       * @description The VM's node.
       * @example example-node-01
       */
      node_id: string;
      /** @description The copy policy the VM's agent keeps for it (its last heartbeat); null when the agent reports none (an agent before copies). */
      policy: components['schemas']['CopyPolicy'] | null;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    VmLifeCycle: {
      /**
       * @description running from the create on, stopped once an operator stops it, running again once started; kept with the VM on its node across agent restarts and reboots.
       * @example running
       */
      desired_state: components['schemas']['DesiredVmState'];
      /**
       * @description How the VM's process last ended without an operator asking; null if it never did.
       * @example QEMU process 4242 ended while the VM should run
       */
      last_exit: string | null;
      /**
       * Format: date-time
       * @description When the agent starts the VM again (its restart backoff: 5 s doubling to 5 min); null when no start is planned.
       * @example null
       */
      next_start_at: string | null;
      /**
       * @description An operation under way on the node; null when none is.
       * @example stopping
       * @enum {string|null}
       */
      operation: 'stopping' | 'starting' | 'restarting' | null;
      /**
       * @description Why the VM is in Error (a crash loop, a start that fails, no room left on the node), or why it is not running as asked; null otherwise.
       * @example null
       */
      reason: string | null;
      /**
       * @description Failures in a row: its process ending without an operator asking (a crash; not a node's reboot) or a start from its disk failing or finding no room. 3 or more list it Error while it has no process. Back to 0 once it has run 10 min, when an operator stops or starts it, and when its agent restarts.
       * @example 0
       */
      restart_count: number;
      /** @example Running */
      state: components['schemas']['VmState'];
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    VmPeerCopy: {
      /**
       * Format: date-time
       * @description When the source took the newest complete, checked transfer (the copy's point in time).
       */
      copied_at: string;
      /**
       * @description The node holding the copy (a `--from` of `ppn-fleet vm restore`).
       * @example example-node-01
       */
      node_id: string;
      /** @description The copy's files on disk, in bytes. */
      size_bytes: number;
      /**
       * @description The node whose agent sent the copy (the node that ran the VM then).
       * @example example-node-01
       */
      source_node_id: string;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    /** @enum {string} */
    VmState: 'Running' | 'Stopped' | 'Provisioning' | 'Error';
  };
  responses: never;
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
  listNodeDisks: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The live nodes; [] when there are none. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['NodeDiskRoom'][];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  declareNodeDead: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example example-node-01 */
        node_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Marked: the leader recovers its protected VMs. */
      202: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['DeclaredDeadNode'];
        };
      };
      /** @description node_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No lease of the node is known in etcd. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "node example-node-01: no lease of it is known in etcd (it never heartbeat to a controller on etcd, or its recovery is done)",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The node still renews its lease (it heartbeats to a controller), or the fleet is not in etcd mode. Nothing was marked. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "node example-node-01 still renews its lease (last renewed 2026-08-06T12:00:00.000Z, 40 s left): it heartbeats to a controller, so it may run its VMs; a node is declared dead only once its lease ran out (45 s, VM_FLEET_FENCE_AFTER_S, after its last heartbeat), when it has ended them itself",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  getNodeDrain: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example example-node-01 */
        node_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['NodeDrain'];
        };
      };
      /** @description node_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No node of that id is enrolled (nor drained). */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "node example-node-01 is not enrolled",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  drainNode: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example example-node-01 */
        node_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The node, drained, and what became of each VM. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['NodeDrain'];
        };
      };
      /** @description node_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No node of that id is enrolled (nor drained). */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "node example-node-01 is not enrolled",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description A drain of the node is under way on this controller. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "node example-node-01: a drain of it is under way (ppn-fleet node drain-status example-node-01 shows it)",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  undrainNode: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example example-node-01 */
        node_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The node, no longer drained. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['NodeDrain'];
        };
      };
      /** @description node_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No node of that id is enrolled (nor drained). */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "node example-node-01 is not enrolled",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listVmsWithLifeCycles: {
    parameters: {
      query?: {
        /**
         * @description Only VMs of this tenant. Given once, as a plain value (never as an array or object).
         * @example example-tenant
         */
        tenant_id?: string;
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The VMs; [] when there are none. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVmWithLifeCycle'][];
        };
      };
      /** @description tenant_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "tenant_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with a tenant's token (VM_FLEET_TENANT_SECRET): tenant_id names another tenant. */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant_id names another tenant: tenant acme's token opens its own VMs only",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  getVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The VM. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVmWithLifeCycle'];
        };
      };
      /** @description vm_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No node lists a VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not listed on any live node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listVmBackups: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVmBackups'];
        };
      };
      /** @description vm_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node lists a VM with this id.
       *     - The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.
       */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM is listed with node_silent_since: no live agent manages it, so none is asked. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is on node example-node-01, whose agent has not listed it since 2026-08-06T12:00:00.000Z: no agent can be asked for the backups read. Start the node's agent again with the same VM_NODE_ID and VM_DISK_DIR, then try again",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  backUpVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The backup was taken on by the agent. */
      202: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVmBackups'];
        };
      };
      /** @description vm_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node lists a VM with this id.
       *     - The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.
       */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The VM is listed with node_silent_since: no live agent manages it, so none is asked.
       *     - The agent refused: backups are off on this node (VM_BACKUP_DIR is not set).
       *     - The agent refused: vm <vm_id> is already being backed up.
       */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  readVmConsole: {
    parameters: {
      query?: {
        /** @description Byte offset in the console log to read from (a follower passes the last answer's `next`); absent: the last max_bytes. */
        from?: number;
        max_bytes?: number;
      };
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The text, and where to read from next. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmConsole'];
        };
      };
      /** @description vm_id is not a fleet id, or from or max_bytes is out of its range; the message names each. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "max_bytes must not be greater than 1048576",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node lists a VM with this id.
       *     - The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.
       */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM is listed with node_silent_since: no live agent manages it, so none is asked. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is on node example-node-01, whose agent has not listed it since 2026-08-06T12:00:00.000Z: no agent can be asked for the console read. Start the node's agent again with the same VM_NODE_ID and VM_DISK_DIR, then try again",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listVmCopies: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmCopies'];
        };
      };
      /** @description vm_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No node lists a VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not listed on any live node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  moveVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['MoveVmRequest'];
      };
    };
    responses: {
      /** @description The VM, on its new node. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['MovedVm'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - vm_id or to is not a fleet id.
       */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "tenant acme's token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)",
           *       "statusCode": 403
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description No node lists the VM. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on any node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM is neither Running nor Stopped, its node is silent, or another move of it is under way. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is Provisioning on node example-node-01: a move takes a Running or Stopped VM",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The body is larger than 1 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Payload Too Large",
           *       "message": "request body is larger than 1 MiB",
           *       "statusCode": 413
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The body comes with a Content-Encoding other than identity: the daemons decode nothing.
       *     - The body is not sent as Content-Type: application/json.
       */
      415: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description `to` is not a live node, or is the VM's own; or a node refused: another machine type, CPU model or accelerator (named), no room. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Unprocessable Entity",
           *       "message": "node example-node-01 refused the move: node n2 answered POST /v1/moves/vm-0123456789abcdef/incoming with 422: accel: the VM runs under KVM on node example-node-01 and this node cannot use KVM",
           *       "statusCode": 422
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The move failed midway (the VM is left on its old node), or its new node did not report it within 60 s (the old node keeps its disk). */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Gateway",
           *       "message": "vm vm-0123456789abcdef: the move failed; the VM is left on node example-node-01 (its agent's log says why)",
           *       "statusCode": 502
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node can take the VM (placement names each and why), or the named one cannot.
       *     - Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed.
       */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  restartVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['RestartVmRequest'];
      };
    };
    responses: {
      /** @description The restart was taken by the agent. */
      202: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmLifeCycle'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - vm_id is not a fleet id, or force or timeout_s is not what it must be; the message names each.
       */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node lists a VM with this id.
       *     - The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.
       */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The VM is listed with node_silent_since: no live agent manages it, so none is asked.
       *     - The agent refused: vm <vm_id> is being created; try again once it is Running.
       *     - The agent refused: vm <vm_id> is already stopping.
       *     - The agent refused: vm <vm_id> cannot be read on its node (sidecar unreadable); only a delete acts on it.
       *     - The agent refused with a 409 in other words: the answer does not quote it.
       */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The body is larger than 1 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Payload Too Large",
           *       "message": "request body is larger than 1 MiB",
           *       "statusCode": 413
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The body comes with a Content-Encoding other than identity: the daemons decode nothing.
       *     - The body is not sent as Content-Type: application/json.
       */
      415: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The node has no room to start the VM: the agent's reason follows, printable and at most 200 characters. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Unprocessable Entity",
           *       "message": "vm vm-0123456789abcdef cannot be started on node example-node-01: ram_mb: 2048 MB does not fit on this node: 1024 MB committable of 24576 MB (margin 512 MB)",
           *       "statusCode": 422
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  restoreVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['RestoreVmRequest'];
      };
    };
    responses: {
      /** @description The VM, made and starting on its node. */
      201: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['RestoredVm'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - vm_id is not a fleet id, or a field of the body is not what it must be; the message names each.
       */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The controller has no record of the VM and no live node holds a copy of it (nor, with `to`, a backup). */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not known here and no live node holds a copy of it; restore it from a backup: from <backup_id> with to <node>",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description A live node lists the VM (and as_new is not set), another restore of it is under way, or the target node has a VM with its id. Nothing was made. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef still runs on node example-node-01 (its live agent lists it): delete it there first, or restore it as a new VM beside it (as_new)",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The body is larger than 1 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Payload Too Large",
           *       "message": "request body is larger than 1 MiB",
           *       "statusCode": 413
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The body comes with a Content-Encoding other than identity: the daemons decode nothing.
       *     - The body is not sent as Content-Type: application/json.
       */
      415: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The copy or backup cannot be had where named: a node not live, one holding no copy, a backup without `to`, none at or before `at`; or the target's agent refused (no room, a damaged file, a pull from the holder that failed). The message names the field and where the VM's copies are. Nothing was made.
       *     - The target node's RAM cannot hold the VM, as for a create with preferred_node.
       */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description A new VM (as_new), or one the controller no longer counts, would take its tenant beyond a quota (VM_FLEET_TENANT_QUOTAS_FILE), as a create would: each one named with its use and limit; nothing is made. */
      429: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Too Many Requests",
           *       "message": "tenant acme would go beyond its quota, nothing was made: vms: 5 VMs in use + 1 requested > limit 5 VMs",
           *       "statusCode": 429
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The target node's agent could not be reached, or answered what its API does not give. */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Gateway",
           *       "message": "vm vm-0123456789abcdef: the agent of node example-node-01 could not be reached for the restore",
           *       "statusCode": 502
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Other creates of the same tenant held its quota's check for longer than 15 s; retry.
       *     - Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed.
       */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  startVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The start was taken by the agent. */
      202: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmLifeCycle'];
        };
      };
      /** @description vm_id is not a fleet id. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Request",
           *       "message": "vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit",
           *       "statusCode": 400
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node lists a VM with this id.
       *     - The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.
       */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The VM is listed with node_silent_since: no live agent manages it, so none is asked.
       *     - The agent refused: vm <vm_id> is already running.
       *     - The agent refused: vm <vm_id> is being created; try again once it is Running.
       *     - The agent refused: vm <vm_id> is already stopping.
       *     - The agent refused: vm <vm_id> cannot be read on its node (sidecar unreadable); only a delete acts on it.
       *     - The agent refused with a 409 in other words: the answer does not quote it.
       */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The node has no room to start the VM: the agent's reason follows, printable and at most 200 characters. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Unprocessable Entity",
           *       "message": "vm vm-0123456789abcdef cannot be started on node example-node-01: ram_mb: 2048 MB does not fit on this node: 1024 MB committable of 24576 MB (margin 512 MB)",
           *       "statusCode": 422
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  stopVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        /** @example vm-0123456789abcdef */
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['StopVmRequest'];
      };
    };
    responses: {
      /** @description The stop was taken by the agent. */
      202: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmLifeCycle'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - vm_id is not a fleet id, or force or timeout_s is not what it must be; the message names each.
       */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Only when VM_FLEET_API_TOKEN is set on this daemon: the request has no `Authorization: Bearer <API token>`.
       *     - Only when VM_FLEET_API_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Sec-Fetch-Site or Origin says a page of another site sent it.
       *     - It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.
       */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - No node lists a VM with this id.
       *     - The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.
       */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The VM is listed with node_silent_since: no live agent manages it, so none is asked.
       *     - The agent refused: vm <vm_id> is already stopped.
       *     - The agent refused: vm <vm_id> is being created; try again once it is Running.
       *     - The agent refused: vm <vm_id> is already stopping.
       *     - The agent refused: vm <vm_id> cannot be read on its node (sidecar unreadable); only a delete acts on it.
       *     - The agent refused with a 409 in other words: the answer does not quote it.
       */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The body is larger than 1 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Payload Too Large",
           *       "message": "request body is larger than 1 MiB",
           *       "statusCode": 413
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The body comes with a Content-Encoding other than identity: the daemons decode nothing.
       *     - The body is not sent as Content-Type: application/json.
       */
      415: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say). */
      421: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Misdirected",
           *       "message": "Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS",
           *       "statusCode": 421
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
}
