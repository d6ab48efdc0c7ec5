// Generated from openapi/vm-host.openapi.json by `npm run openapi`. Do not edit.
export interface paths {
  '/v1/restores': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Make a VM on this node from a copy or backup, and start it
     * @description Admitted as a spawn is (RAM, vCPUs, disk room); its sidecar is written first, as the restore's intent: an agent killed before the disk is whole rolls the VM back at its next start, and one killed after starts it. The chosen file and the files before it in its chain are checked against their manifest (size, sha256), then converted into the VM's disk (qemu-img convert -O qcow2, into a partial file renamed once whole); the VM keeps vm_id (so its guest sees the same instance: same host keys) and gets each port on the same host port where free here, else a new one. Answers the VM (Provisioning) and the point it was made from; it starts after the answer.
     */
    post: operations['restoreVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/restores/{vm_id}/points': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Where a VM can be restored from on this node, newest first
     * @description The files of the chains this node holds for the VM: the copy a peer keeps here (VM_DISK_DIR/replicas/<vm_id>/) and the backups in VM_BACKUP_DIR/<vm_id>/ (any VM's, on this node or not: a folder copied from a dead node is read the same), with the VM as the newest chain's manifest describes it. [] and null when there are none; the VM need not be on this node.
     */
    get: operations['listRestorePoints'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/spawn': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Accept a VM (state Provisioning) once its files are made, and start it under QEMU after answering
     * @description What the fleet controller calls once it has placed a VM on this node. The agent checks the node can hold it (RAM after a 512 MB margin, vCPUs within VM_VCPU_OVERCOMMIT), makes it under the vm_id the controller minted (one of its own when the request has none; 409 when that id is taken here), makes its disk in VM_DISK_DIR (over VM_BASE_IMAGE, or a small blank image when that is unset) and seed ISO, answers with the new VM (state Provisioning), then starts QEMU; the VM's state (Running, or Error) shows in GET /v1/vms and the next heartbeat.
     */
    post: operations['spawnVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vm-life-cycles': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Every VM's life cycle on this node: state, desired state, restarts, reason
     * @description What GET /v1/vms lists, with what operators need beside it: the state each VM should be in, an action under way, its restarts since it last ran steadily, how its process last ended, why it is not as asked, and when it is started again.
     */
    get: operations['listVmLifeCycles'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vm-life-cycles/{vm_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * One VM's life cycle on this node
     * @description As in the list of every VM, for one.
     */
    get: operations['getVmLifeCycle'];
    put?: never;
    post?: never;
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
     * This node's VMs, as its heartbeat reports them
     * @description Every VM this agent keeps in VM_DISK_DIR, with its state as of now: the list the next heartbeat sends.
     */
    get: operations['listNodeVms'];
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
    get?: never;
    put?: never;
    post?: never;
    /**
     * Stop every process of the VM, remove its files, and put its disk aside
     * @description Stops the VM's QEMU (quit, then SIGTERM, then SIGKILL), also one found by name when the agent lost its pid, and answers only once no process of the VM runs; then removes its runtime files and takes its disk out of use: moved to VM_DISK_DIR/deleted/ and removed once VM_DISK_RETENTION_S has passed (86400 s by default; 0 removes it at once). The VM leaves this node's list and its next heartbeat.
     */
    delete: operations['destroyVm'];
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
     * A VM's backups in this node's VM_BACKUP_DIR, newest first
     * @description Each backup is a point in time: a file of a qcow2 chain (the first file full, each next one incremental, backed by the one before) with a manifest.json beside it. in_progress_since: a backup under way; last_error: why the last one failed. [] when VM_BACKUP_DIR is unset.
     */
    get: operations['listVmBackups'];
    put?: never;
    /**
     * Back a VM up to VM_BACKUP_DIR now
     * @description Answers at once (in_progress_since set); the backup runs after any other under way on this node. A running VM is copied by QEMU while it runs: a full copy when its chain has no usable bitmap (the first backup, a new UTC day, after a crash or a power cut, after a copy cut short), else the clusters written since the chain's last backup. A stopped VM is copied from its file, full. The new file joins its chain only once the copy completed and `qemu-img check` passed.
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
     * A part of the VM's serial console log (of its current boot), made printable
     * @description At most max_bytes (default 64 KiB, at most 1 MiB): from `from` when given (a follower passes the last answer's `next`), else the last ones. Terminal escapes and control characters other than tab and newline are left out. A log shorter than `from` belongs to a new boot: it is read from its start, with reset true.
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
  '/v1/vms/{vm_id}/copy-plan': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    /**
     * Sets where and how often the VM's copies go (the controller sends it)
     * @description Kept beside the VM's files, so an agent restart keeps copying. Every every_s the running VM is copied to each peer with QEMU's incremental backup (the first copy full), staged under VM_DISK_DIR, sent at most VM_COPY_MAX_MBPS with the peer's grant; a stopped VM once. peers []: copies stop.
     */
    put: operations['putVmCopyPlan'];
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/move-out': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Moves the VM to another node (live when it runs, cold when stopped)
     * @description Live: its disk mirrored over NBD (write-blocking) to the other node, whose QEMU, on the same machine type and CPU model, awaits its migration; the migration paused before its switchover, the mirror ended, then the switchover; the other node runs the guest and answers, and it is stopped here (desired_state stopped) with its disk kept until move-release. Cold: its disk sent over NBD, the other node starting it when it should run. A failure before the other node runs it leaves it running here. Answers once it is there, with what the move took.
     */
    post: operations['moveVmOut'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/move-release': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Removes a VM moved to another node: its disk and files here
     * @description Sent by the controller once the new node reported the VM. Refused (409) while the VM should run here or its QEMU lives; 204 also when it is gone already.
     */
    post: operations['releaseMovedVm'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/vms/{vm_id}/move-resume': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Runs again a guest a move left paused here, its new node having rolled it back
     * @description Sent by the controller once the new node answered that it rolled the move back (nothing of the guest there): a guest this node left paused after its migration completed, the new node's take-over unconfirmed, runs again. Does nothing (204) when no guest is left paused by a move.
     */
    post: operations['resumeMovedVm'];
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
     * Restart a VM: a stop then a start (with force, a reset in place)
     * @description A stop (ACPI power-down, timeout_s, then its process ended) then a start from its disk, in a new process; with force, a hardware reset of the running process (QMP system_reset). A VM without a process is started.
     */
    post: operations['restartVm'];
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
     * Start a stopped VM again from its own disk
     * @description Admits the VM as a create is (its RAM and vCPUs beside every committed VM), writes its desired state `running`, answers at once (Provisioning), then starts it from its own disk: same vm_id, overlay and cloud-init instance (no first boot again), same host ports where they are free. A start that fails is tried again with the restart backoff (5 s doubling to 5 min); after 3 failures in a row the VM is listed Error with the reason.
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
     * Stop a VM: ACPI power-down, then its process ended after timeout_s (at once when forced)
     * @description Writes the VM's desired state `stopped` (kept across agent restarts and reboots), answers at once, then asks the guest to power down (QMP system_powerdown, the ACPI button, pressed again every 5 s: a guest still booting misses a press) and ends QEMU once timeout_s passed (quit, SIGTERM, SIGKILL); with force, ends it at once. The disk is kept; the VM is listed Stopped once its process is gone and no longer commits its RAM. A VM that should run but has no process (a restart pending, a crash loop) is stopped too: it is not started again.
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
    AgentMoveOutRequest: {
      /** @description The node it goes to: its agent, and the controller's grant for it. */
      to: components['schemas']['CopyPeer'];
    };
    AgentMovedOut: {
      bytes_sent: number;
      /** @enum {string} */
      mode: 'live' | 'cold';
      pause_ms: number | null;
      total_ms: number;
      /** @description The VM as its new node answered it. */
      vm: components['schemas']['VmRecord'];
    };
    AgentRestoreRequest: {
      copies?: components['schemas']['CopyPolicy'];
      /** @example 20 */
      disk_gb?: number;
      /**
       * Format: date-time
       * @description When the controller ordered the restore (its wall clock): a restore from this node's copy records it as the copy's restore moment (copy grants issued before it write nothing more); absent (an older controller): this node's clock.
       */
      issued_at?: string;
      /** @description false: every port on a free host port of its own (a VM restored as new beside the original). */
      keep_host_ports: boolean;
      /** @description The VM's forwards, SSH (guest 22/tcp) first (a 400 otherwise): each guest port published again, on the same host port where it is free on this node (and keep_host_ports; never one below 1024), else on a free one. */
      ports: components['schemas']['HostPort'][];
      /** @example 2048 */
      ram_mb: number;
      source: components['schemas']['RestoreSource'];
      /** @example example-tenant */
      tenant_id?: string | null;
      /** @example 2 */
      vcpu_count: number;
      /**
       * @description The VM made: kept from the copy (so its guest sees the same instance) unless restored as new.
       * @example vm-0123456789abcdef
       */
      vm_id: string;
      /** @example web */
      vm_type: string;
    };
    AgentRestoredVm: {
      point: components['schemas']['RestorePoint'];
      vm: components['schemas']['VmRecord'];
    };
    CopyPeer: {
      /**
       * @description The peer's agent: its wg_ip and spawn_port.
       * @example 192.0.2.11:9100
       */
      address: string;
      /** Format: date-time */
      expires_at: string;
      /** @description Issued by the controller, signed with the peer's node token: lets this VM's node write (and read back) this VM's copy on that peer alone, until expires_at. Sent to the peer as "Authorization: Bearer <grant>". */
      grant: string;
      /** @example example-node-01 */
      node_id: string;
    };
    CopyPlan: {
      every_s: number;
      /** @description Empty: copy nowhere. */
      peers: components['schemas']['CopyPeer'][];
    };
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
    /**
     * @description running from the create on, stopped once an operator stops it, running again once started; kept with the VM on its node across agent restarts and reboots.
     * @enum {string}
     */
    DesiredVmState: 'running' | 'stopped';
    ErrorBody: {
      /** @description The status's reason phrase, such as `Not Found`. */
      error: string;
      /** @description What went wrong, naming the field, header or id at fault. */
      message: string;
      /** @description The HTTP status again. */
      statusCode: number;
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
    PublishedPortRequest: {
      /** @example 80 */
      guest_port: number;
      /**
       * @description That exact port on the node (refused naming it when taken or reserved); absent: a free one is chosen.
       * @example 8080
       */
      host_port?: number;
      /**
       * @example tcp
       * @enum {string}
       */
      protocol: 'tcp' | 'udp';
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
    RestorePoints: {
      /** @description Newest first; [] when the node holds none. */
      points: components['schemas']['RestorePoint'][];
      /** @description The VM as the newest chain's manifest describes it; null when no chain can be read. */
      spec: components['schemas']['RestoreSpec'] | null;
      /** @example vm-0123456789abcdef */
      vm_id: string;
    };
    RestorePull: {
      /**
       * @description The holder's agent: its wg_ip and spawn_port.
       * @example 192.0.2.11:9100
       */
      address: string;
      /** @example 20261205T041700Z-3f2a/0003 */
      backup_id: string;
      /** @description A read grant: lets this node read that VM's copy on the holder alone, until it expires. Sent to the holder as "Authorization: Bearer <grant>". */
      grant: string;
      /**
       * @description The node holding the copy.
       * @example example-node-01
       */
      node_id: string;
    };
    RestoreSource: {
      /**
       * Format: date-time
       * @description The newest file taken at or before this time; a backup_id naming a later file is refused.
       */
      at?: string;
      /**
       * @description A backup in this node's VM_BACKUP_DIR/<vm_id>/: `<chain_id>/<index>` (that file), or `<chain_id>` (its newest file, or the newest taken at or before `at`). Any VM's backups, on this node or not (a folder copied from a dead node).
       * @example 20261205T041700Z-3f2a/0003
       */
      backup_id?: string;
      /** @description With replica: the copy is held by another node: pulled from it (a read grant) into a private staging folder, checked, then made the VM's disk. */
      pull?: components['schemas']['RestorePull'];
      /** @description true: the copy of the VM this node holds as a peer (VM_DISK_DIR/replicas/<vm_id>/), its newest complete file (or the newest taken at or before `at`). Exactly one of replica and backup_id. */
      replica?: boolean;
      /**
       * @description The VM whose copy or backup is read; absent: the vm_id restored (as_new gives another).
       * @example vm-0123456789abcdef
       */
      vm_id?: string;
    };
    RestoreSpec: {
      disk_gb?: number;
      /** @description SSH first. */
      ports: components['schemas']['HostPort'][];
      ram_mb: number;
      tenant_id: string | null;
      vcpu_count: number;
      /** @example web */
      vm_type: string;
    };
    SpawnVmRequest: {
      /** @description Copies of the VM's disk on other nodes (see docs/vms.md "Copies, backups and restore"). Absent: the controller's defaults (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S). */
      copies?: components['schemas']['CopyPolicy'];
      /**
       * Format: date-time
       * @description When the controller stops waiting for this spawn (its clock): an agent whose clock is past it refuses the spawn (409) and makes nothing, so a spawn delivered late (the agent frozen, the request held up) never makes a VM the controller has given up on. Absent: no deadline.
       * @example 2026-08-06T12:00:10.000Z
       */
      deadline?: string;
      /**
       * @description The VM's disk in GiB (its virtual size), at least the base image's. Absent: the base image's size. Counted whole against the node's disk room (see docs/vms.md).
       * @example 20
       */
      disk_gb?: number;
      /** @description Guest ports to publish on the node's mesh address (VM_WG_IP) beside SSH, which is always there and first in host_ports. Absent: SSH only. */
      ports?: components['schemas']['PublishedPortRequest'][];
      /**
       * @description Placement only: a node whose heartbeat says kvm_available is chosen first. Every node runs its VMs under KVM where it can, prefer_kvm or not (the VM record says which: accel).
       * @default false
       */
      prefer_kvm: boolean;
      /** @example null */
      preferred_node?: string | null;
      /** @example 2048 */
      ram_mb: number;
      /** @example example-tenant */
      tenant_id?: string | null;
      /** @example 2 */
      vcpu_count: number;
      /**
       * @description The id the controller minted for the VM; the agent makes the VM under this id (absent: it mints one).
       * @example vm-0123456789abcdef
       */
      vm_id?: string;
      /** @example web */
      vm_type: string;
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
    VmRecord: {
      /**
       * @description How the VM runs on its node: kvm (hardware virtualization) or tcg (QEMU's emulation, slower). Chosen by the node's agent (VM_ACCEL; prefer_kvm only steers placement), tcg when KVM failed there. Null while the VM has not (yet) been started, and from agents that do not report it.
       * @example kvm
       * @enum {string|null}
       */
      accel: 'kvm' | 'tcg' | null;
      host_ports: components['schemas']['HostPort'][];
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
  restoreVm: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['AgentRestoreRequest'];
      };
    };
    responses: {
      /** @description The VM, made; starting. */
      201: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['AgentRestoredVm'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - A field is missing or out of its range, or the source names neither or both of replica and backup_id; the message names each.
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description A VM with this vm_id is on this node already (or its run folder or disk is): nothing was made. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm_id vm-0123456789abcdef is already taken on this node; no VM was made",
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
      /**
       * @description - The source cannot be used: this node holds no copy of the VM, no such backup, none taken at or before `at`, backups are off here, or a file of the chain does not match its manifest. Nothing was made.
       *     - The node cannot hold the VM (RAM, vCPUs, or its disk in the disk room); the message names the numbers.
       *     - No free host port is left on VM_WG_IP for a port that must move.
       */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description VM_DISK_DIR is full (ENOSPC, quota) while the disk was written; nothing of the VM was kept. */
      507: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Insufficient Storage",
           *       "message": "VM_DISK_DIR /var/lib/vm-fleet: no space left on device (ENOSPC) while making the restored VM's disk; nothing of the VM was kept",
           *       "statusCode": 507
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listRestorePoints: {
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
          'application/json': components['schemas']['RestorePoints'];
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  spawnVm: {
    parameters: {
      query?: never;
      header?: {
        /** @description `<key_hash>.<request_hash>`: sha256 hex of the client's Idempotency-Key, a dot, sha256 hex of the canonical request. The agent keeps it with the VM for a day: the same value again answers that VM (200), the same key_hash with another request_hash is a 422. */
        'Idempotency-Key'?: string;
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['SpawnVmRequest'];
      };
    };
    responses: {
      /** @description The VM an earlier spawn with the same Idempotency-Key made; no new VM. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmRecord'];
        };
      };
      /** @description A new VM, accepted; starting. */
      201: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmRecord'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - A field is missing or out of its range; the message names each one.
       *     - The Idempotency-Key header is not in the form the controller sends.
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
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
       * @description - The vm_id the controller minted is already taken on this node (a VM, its run folder or its disk has it); nothing was made.
       *     - The spawn's deadline had passed by this agent's clock when it was read (the agent was frozen, or the request held up): the controller no longer waits for it; nothing was made.
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
      /**
       * @description - The node cannot hold the VM: the message names ram_mb or vcpu_count and the numbers, or the number of VMs it holds and the limit (MAX_VMS_PER_HEARTBEAT, 1024).
       *     - The VM's disk (disk_gb, else the base image's size) does not fit in the node's disk room: every VM disk counted at its virtual size against VM_DISK_DIR's room less its reserve (times VM_DISK_OVERCOMMIT); the message names disk_gb and the numbers.
       *     - disk_gb is smaller than the base image's virtual size.
       *     - No free host port is left on VM_WG_IP for the VM's forwards (the kernel's range bound, or held by this node's VMs); nothing was made.
       *     - The Idempotency-Key was used for another request.
       */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description VM_DISK_DIR may not be written (EACCES, EPERM, read-only); nothing of the VM was kept. */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Internal Server Error",
           *       "message": "VM_DISK_DIR /var/lib/vm-fleet: permission denied (EACCES) while making the disk; nothing of the VM was kept",
           *       "statusCode": 500
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description VM_BASE_IMAGE names no readable file: this node cannot make VMs now. */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Service Unavailable",
           *       "message": "VM_BASE_IMAGE /var/lib/vm-fleet/base.qcow2 does not exist or is not readable",
           *       "statusCode": 503
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description VM_DISK_DIR is full (ENOSPC, quota); nothing of the VM was kept. */
      507: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Insufficient Storage",
           *       "message": "VM_DISK_DIR /var/lib/vm-fleet: no space left on device (ENOSPC) while making the disk; nothing of the VM was kept",
           *       "statusCode": 507
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listVmLifeCycles: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description This node's VMs; [] when there are none. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmLifeCycle'][];
        };
      };
      /**
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  getVmLifeCycle: {
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listNodeVms: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description This node's VMs; [] when there are none. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmRecord'][];
        };
      };
      /**
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  destroyVm: {
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
      /** @description Destroyed: no process of the VM runs any more. */
      204: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description A process of the VM outlived SIGKILL; the VM is kept. */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Internal Server Error",
           *       "message": "vm vm-0123456789abcdef: QEMU pid 4242 still runs after quit, SIGTERM and SIGKILL; the VM is kept",
           *       "statusCode": 500
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
          'application/json': components['schemas']['VmBackups'];
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
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
      /** @description The VM's backups as of now. */
      202: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmBackups'];
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The message is one of: "backups are off on this node (VM_BACKUP_DIR is not set)", "vm <id> is already being backed up". Nothing was started. (A VM neither Running nor Stopped, or running in a QEMU started before copies, is refused once its turn comes: see last_error.) */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "backups are off on this node (VM_BACKUP_DIR is not set)",
           *       "statusCode": 409
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
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmConsole'];
        };
      };
      /** @description vm_id is not a fleet id, or a field is out of its range; the message names each. */
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  putVmCopyPlan: {
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
        'application/json': components['schemas']['CopyPlan'];
      };
    };
    responses: {
      /** @description The plan as kept. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['CopyPlan'];
        };
      };
      /**
       * @description - vm_id is not a fleet id.
       *     - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
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
    };
  };
  moveVmOut: {
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
        'application/json': components['schemas']['AgentMoveOutRequest'];
      };
    };
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['AgentMovedOut'];
        };
      };
      /**
       * @description - vm_id is not a fleet id.
       *     - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM is being started, stopped or deleted, in error, or neither running nor stopped. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is busy (stop): move it once that ends",
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
      /** @description The other node refused it: another machine type, CPU model or accelerator, no room. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Unprocessable Entity",
           *       "message": "node node-b answered POST /v1/moves/web-1/incoming with 422: machine: this node's QEMU has no machine type pc-q35-9.1",
           *       "statusCode": 422
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The move failed midway; the VM runs here still (or stays here, stopped). */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Gateway",
           *       "message": "vm vm-0123456789abcdef: its move to node node-b failed, it runs here still: the migration failed",
           *       "statusCode": 502
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  releaseMovedVm: {
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
      /** @description Removed, or not here. */
      204: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM should run here, or its QEMU lives: kept. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is not moved out of this node: kept",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  resumeMovedVm: {
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
      /** @description Resumed, or nothing to resume. */
      204: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM was moved out of this node (it should not run here). */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is moved out of this node: not resumed",
           *       "statusCode": 409
           *     }
           */
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
      /** @description Restarting: its life cycle as of now. */
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
       *     - vm_id is not a fleet id, or a field is out of its range; the message names each.
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM is being created, or another action on it is under way. The message is one of: "vm <id> is already stopped", "vm <id> is already running", "vm <id> is being created; try again once it is Running", "vm <id> is already <stopping|restarting|starting|being changed>", "vm <id> cannot be read on its node (sidecar unreadable); only a delete acts on it". Nothing was changed. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is already stopping",
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
      /** @description The node has no room left to start the VM (its RAM and vCPUs beside every committed VM, as for a create); the message names the numbers. Nothing was changed: it stays stopped. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Unprocessable Entity",
           *       "message": "ram_mb: 2048 MB does not fit on this node: 1024 MB committable of 8192 MB (margin 512 MB)",
           *       "statusCode": 422
           *     }
           */
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
      /** @description Starting: its life cycle as of now. */
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM runs already, is being created, or another action on it is under way. The message is one of: "vm <id> is already stopped", "vm <id> is already running", "vm <id> is being created; try again once it is Running", "vm <id> is already <stopping|restarting|starting|being changed>", "vm <id> cannot be read on its node (sidecar unreadable); only a delete acts on it". Nothing was changed. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is already running",
           *       "statusCode": 409
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The node has no room left to start the VM (its RAM and vCPUs beside every committed VM, as for a create); the message names the numbers. Nothing was changed: it stays stopped. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Unprocessable Entity",
           *       "message": "ram_mb: 2048 MB does not fit on this node: 1024 MB committable of 8192 MB (margin 512 MB)",
           *       "statusCode": 422
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
      /** @description Stopping: its life cycle as of now. */
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
       *     - vm_id is not a fleet id, or a field is out of its range; the message names each.
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
       * @description - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request has no `Authorization: Bearer <node token>`.
       *     - Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request carries another token.
       */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description This node has no VM with this id. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "vm vm-0123456789abcdef is not on this node",
           *       "statusCode": 404
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM is stopped already, being created, or another action on it is under way. The message is one of: "vm <id> is already stopped", "vm <id> is already running", "vm <id> is being created; try again once it is Running", "vm <id> is already <stopping|restarting|starting|being changed>", "vm <id> cannot be read on its node (sidecar unreadable); only a delete acts on it". Nothing was changed. */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Conflict",
           *       "message": "vm vm-0123456789abcdef is already stopped",
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
      /** @description Never answered: a process that outlives SIGKILL is logged. */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Internal Server Error",
           *       "message": "vm vm-0123456789abcdef: QEMU pid 4242 still runs after quit, SIGTERM and SIGKILL; the VM is kept",
           *       "statusCode": 500
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
}
