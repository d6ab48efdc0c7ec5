// Generated from openapi/fleet.openapi.json by `npm run openapi`. Do not edit.
export interface paths {
  '/v1/fleet': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Every live node and when this view was taken
     * @description The live nodes (as GET /v1/nodes lists them) and the time of this view. Also the way to ask whether the controller is up: there is no /healthz.
     */
    get: operations['getFleet'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/nodes': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Every node heard from in the last 30 s
     * @description The live nodes, sorted by node_id. A node silent for more than 30 s is not shown at all (there is no status field): absent means never enrolled or silent.
     */
    get: operations['listNodes'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/nodes/heartbeat': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Report a node's state; the first heartbeat enrolls it, each one replaces its record
     * @description What every agent sends at start and then every VM_HEARTBEAT_INTERVAL_S seconds. There is no registration call: the first heartbeat of a node id enrolls it. Each heartbeat replaces the node's record and VM list wholesale; a node id already in use is not refused, the newer heartbeat takes it over. A heartbeat stamped before the one stored for the same boot and arriving less than 5 s after it is a late copy: ignored, still 200, and the answer says so (accepted false). One arriving later is taken whatever its stamp: its agent's clock went back. Unknown extra fields are ignored.
     */
    post: operations['postHeartbeat'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/nodes/{node_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * One node, if heard from in the last 30 s
     * @description The node's record, as GET /v1/nodes lists it. 404 both for a node never enrolled and for one silent for more than 30 s: the API does not tell them apart.
     */
    get: operations['getNode'];
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
     * VMs on the nodes, optionally of one tenant
     * @description Every VM the live nodes reported in their last heartbeat (and those created since). There is no GET of one VM by id: filter this list. A node that falls silent (its agent stopped or cut off) leaves every node listing after 30 s, but its VMs, which may still run, stay listed as it last reported them, with node_silent_since, until it heartbeats again (which replaces those it lists; any it does not list, as when another machine now heartbeats with the same node id, stay listed with node_silent_since) or each is forgotten (DELETE with ?forget=true). A VM is listed once: as a live node reports it, when one does.
     */
    get: operations['listVms'];
    put?: never;
    /**
     * Place a VM on a node and have that node's agent start it
     * @description Advisory placement, then dispatch: with preferred_node, that node or a 422; otherwise the node with room for ram_mb + 512 MB (non-reserved nodes first, reserved ones as a last resort; a KVM node first when prefer_kvm; then the most free RAM; nodes that missed two heartbeats are skipped). A refusal lists every live node considered and why each was passed over. The chosen node's agent is asked to start the VM and its answer is returned (state Provisioning). Nothing is ever moved afterwards.
     */
    post: operations['createVm'];
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
     * Have the owning node's agent destroy a VM
     * @description Finds the node that lists the VM and asks its agent to destroy it (QEMU stopped, runtime files removed); the VM then leaves the listing. When the agent cannot be reached the record is kept and the answer is 502, so the delete can be retried. When the node has dropped out (silent for more than 30 s: its agent stopped or cut off), no agent can be asked: 409, the record kept, until the node's agent is started again; the same for a VM listed with node_silent_since on a live node (one that another agent now heartbeats for without listing it). ?forget=true forgets the record of such a VM instead (a machine gone for good), stopping nothing; for a VM a live agent manages it is a 409 (the node is back: DELETE without forget destroys it).
     */
    delete: operations['deleteVm'];
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
    CreateVmRequest: {
      /** @description Copies of the VM's disk on other nodes (see docs/vms.md "Copies, backups and restore"). Absent: the controller's defaults (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S). */
      copies?: components['schemas']['CopyPolicy'];
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
      /** @example web */
      vm_type: string;
    };
    ErrorBody: {
      /** @description The status's reason phrase, such as `Not Found`. */
      error: string;
      /** @description What went wrong, naming the field, header or id at fault. */
      message: string;
      /** @description The HTTP status again. */
      statusCode: number;
    };
    FleetStatus: {
      /**
       * Format: date-time
       * @example 2026-08-06T12:00:05.000Z
       */
      last_updated: string;
      nodes: components['schemas']['NodeRecord'][];
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
    HeartbeatAnswer: {
      /**
       * @description false: ignored as a late copy, because the node's record holds a heartbeat of the same boot stamped later (stored_timestamp_utc) that arrived less than 5 s before; nothing was changed.
       * @example true
       */
      accepted: boolean;
      /**
       * @description etcd mode only, present exactly when fence_after_s is: the controller's default copy count (VM_FLEET_COPIES), which a VM whose copies policy is absent has. The protected VMs the agent fences are those whose copies count (this default when absent) is at least 1: exactly those a recovery restores elsewhere. Absent (a controller before it): a VM without a policy counts as protected.
       * @example 1
       */
      copies_default?: number;
      /**
       * @description etcd mode only, present only when the controller renewed this node's lease in etcd before answering: the node may keep its protected VMs (copies count >= 1) running until fence_after_s seconds after it sent this heartbeat, by its monotonic clock. Absent: no fencing (memory or Redis mode), or the renewal failed.
       * @example 45
       */
      fence_after_s?: number;
      /** @description The routing mesh's table: the published ports of the VMs other live nodes run (docs/vms.md "Reaching a service"); this node listens on each TCP one at its own address and forwards to the node named. Absent: none (an agent closes every listener of its mesh), or a controller before it. */
      mesh_routes?: components['schemas']['MeshRoute'][];
      /**
       * Format: date-time
       * @description Only when not accepted: the stamp stored for this boot. A heartbeat stamped after it is taken.
       * @example 2026-08-06T12:00:10.123456789Z
       */
      stored_timestamp_utc?: string;
      /** @description VMs this node lists that were restored on another node since: the agent stops them if they run, sets their disks aside and lists them no more. Absent: none. */
      superseded_vm_ids?: string[];
      /** @description Only when the heartbeat reported replicas: those of VMs the fleet still has (some node's record lists it, live or silent). A copy this node holds of a VM no answer has listed for 24 h is removed by its agent (docs/vms.md). Absent: a controller before it; nothing is removed. */
      wanted_replica_vm_ids?: string[];
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
    HeartbeatReplica: {
      /**
       * Format: date-time
       * @description When the source took the newest complete, checked transfer (the copy's point in time).
       */
      copied_at: string;
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
    HeartbeatVm: {
      /**
       * @description kvm or tcg: how the agent runs the VM; null while not started.
       * @example kvm
       * @enum {string|null}
       */
      accel?: 'kvm' | 'tcg' | null;
      /** @description The copy policy the agent keeps for this VM (from its create); absent from older agents and VMs made before copies. */
      copies?: components['schemas']['CopyPolicy'];
      /**
       * @description The disk_gb the VM was created with (its disk's virtual size, GiB); absent for a VM made with the base image's size, and from older agents. What a tenant's disk_gb quota counts.
       * @example 20
       */
      disk_gb?: number;
      /** @default [] */
      host_ports: components['schemas']['HostPort'][];
      /**
       * @description The Idempotency-Key the controller spawned this VM with, while the VM is younger than 24 h. The controller uses it to answer retried creates; it never shows it.
       * @example 0000000000000000000000000000000000000000000000000000000000000000.ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
       */
      idempotency_key?: string;
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
      /**
       * @default null
       * @example example-tenant
       */
      tenant_id: string | null;
      /** @example 2 */
      vcpu_count: number;
      /** @example vm-0123456789abcdef */
      vm_id: string;
      /** @example web */
      vm_type: string;
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
    MeshRoute: {
      /** @example 8080 */
      host_port: number;
      /**
       * @description The node that runs it.
       * @example example-node-01
       */
      node_id: string;
      /**
       * @example tcp
       * @enum {string}
       */
      protocol: 'tcp' | 'udp';
      /**
       * @description The VM that publishes it.
       * @example vm-0123456789abcdef
       */
      vm_id: string;
      /**
       * @description That node's mesh address (its heartbeat's wg_ip).
       * @example 192.0.2.10
       */
      wg_ip: string;
    };
    NodeHeartbeat: {
      /** @example 4f0b6a8e-3c1d-4c53-9a53-2f5d2f0e9d10 */
      boot_id: string;
      /** @example 8 */
      cpu_cores: number;
      /** @example 12.5 */
      cpu_load_pct: number;
      /** @description VM_DISK_DIR's disk room; absent from older agents, and when the agent cannot read it. */
      disk_room?: components['schemas']['HeartbeatDiskRoom'];
      /** @description etcd mode only: the protected VMs this agent ended because its lease ran out (fence_after_s passed without a renewal), still fenced (not started again). Absent: none. */
      fenced_vm_ids?: string[];
      /**
       * @description Any text without control or format characters (Unicode Cc, Cf, Zl, Zp).
       * @example example-node-01
       */
      hostname: string;
      /** @example true */
      kvm_available: boolean;
      /** @example example-node-01 */
      node_id: string;
      /** @example 32768 */
      ram_total_mb: number;
      /** @example 8192 */
      ram_used_mb: number;
      /** @description The copies of other nodes' VMs this node holds (complete and checked). Absent from older agents. */
      replicas?: components['schemas']['HeartbeatReplica'][];
      /**
       * @description Last-resort-only for placement.
       * @default false
       */
      reserved: boolean;
      /**
       * @description Port of the agent's local API; absent means 9204.
       * @example 9204
       */
      spawn_port?: number;
      /**
       * Format: date-time
       * @example 2026-08-06T12:00:00.123456789Z
       */
      timestamp_utc: string;
      vms: components['schemas']['HeartbeatVm'][];
      /**
       * @description The node's WireGuard IP address: an IPv4 or IPv6 address literal (no zone, port or prefix). The controller calls the agent at this address only.
       * @example 192.0.2.10
       */
      wg_ip: string;
    };
    NodeRecord: {
      /** @example example-node-01 */
      hostname: string;
      /** @example true */
      kvm_available: boolean;
      /**
       * Format: date-time
       * @example 2026-08-06T12:00:00.123Z
       */
      last_heartbeat: string;
      /** @example example-node-01 */
      node_id: string;
      /** @example 24576 */
      ram_available_mb: number;
      /** @example false */
      reserved: boolean;
      /** @example 2 */
      vm_count: number;
      /** @example 192.0.2.10 */
      wg_ip: string;
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
  getFleet: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The fleet as of last_updated. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetStatus'];
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
  listNodes: {
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
          'application/json': components['schemas']['NodeRecord'][];
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
  postHeartbeat: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['NodeHeartbeat'];
      };
    };
    responses: {
      /** @description Taken (accepted true), or ignored as a late copy (accepted false). */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['HeartbeatAnswer'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - A field is missing or out of its range; the message names each one.
       *     - wg_ip is a loopback address (127.0.0.0/8, ::1) but the heartbeat did not come over loopback: only an agent on the controller's own machine may name one. Judged after the token; nothing is stored.
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
       *     - Only when VM_FLEET_NODE_SECRET is set on the controller: the token is not the one of the body's node_id (another node's, the secret itself, any other). Judged once the body is parsed and valid, before anything is stored.
       */
      401: {
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
  getNode: {
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
      /** @description The live node. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['NodeRecord'];
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
      /** @description No node with this id was heard from in the last 30 s. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Not Found",
           *       "message": "node example-node-01 is not enrolled (or silent for more than 30 s)",
           *       "statusCode": 404
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
  listVms: {
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
      /** @description The VMs, each with the node it runs on; [] when there are none. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVm'][];
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
  createVm: {
    parameters: {
      query?: never;
      header?: {
        /** @description Makes the create safe to retry: the same key with the same body answers the VM the first create made (200), never a second one, for a day; the same key with another body is a 422. */
        'Idempotency-Key'?: string;
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['CreateVmRequest'];
      };
    };
    responses: {
      /** @description A retry: this Idempotency-Key already made this VM. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVm'];
        };
      };
      /** @description Placed on node_id, and accepted by its agent. */
      201: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetVm'];
        };
      };
      /**
       * @description - The body is not valid JSON.
       *     - The body nests or holds more than any valid request could (depth, values, field names).
       *     - A field is missing or out of its range; the message names each one.
       *     - The Idempotency-Key header is not 1-128 characters of the allowed set.
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
       * @description - preferred_node is not listed or has less than ram_mb available.
       *     - The Idempotency-Key was already used with another request body.
       *     - The chosen node's agent refused the VM: its reason (e.g. ram_mb beyond what it can hold) follows.
       *     - The tenant has a disk_gb quota and the body has no disk_gb.
       */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The VM's tenant (VM_FLEET_TENANT_QUOTAS_FILE) would go beyond a quota: each one named with its use and limit; nothing is made. */
      429: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Too Many Requests",
           *       "message": "tenant acme would go beyond its quota, nothing was made: ram_mb: 7168 MB in use + 2048 requested > limit 8192 MB",
           *       "statusCode": 429
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - The node's agent could not be reached, or did not answer within 10 s. A create without preferred_node tries the next best node (up to 3 in all, within 20 s) only when the request never reached this agent (connection refused, no route); a timeout or a reset is a 502 at once, as that agent may still be making the VM. The answer is the same whatever is at the node's address; the controller's log has the detail.
       *     - The node's agent failed the spawn: its own message follows when it gave one. An agent's 503 (it can make no VM) first sends a create without preferred_node on to the next best node, as an unreachable one does.
       */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /**
       * @description - Another controller was still making a VM with this Idempotency-Key after 30 s; retry with the same key.
       *     - This Idempotency-Key's first dispatch went to a node that never answered and has stopped heartbeating: it may still make the VM until the spawn's deadline (plus 10 s for its clock), so no other node is asked before; retry with the same key then.
       *     - Other creates of the same tenant held its quota's check for longer than 15 s; retry.
       *     - No live node has room for ram_mb + 512 MB: every node considered, and why each was passed over.
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
      /** @description The chosen node's disk folder has no room for the VM (the agent's reason). */
      507: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Insufficient Storage",
           *       "message": "node example-node-01 refused the VM: VM_DISK_DIR /var/lib/vm-fleet: no space left on device (ENOSPC) while making the disk; nothing of the VM was kept",
           *       "statusCode": 507
           *     }
           */
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  deleteVm: {
    parameters: {
      query?: {
        /**
         * @description true: for a VM listed with node_silent_since whose machine is gone for good, forget its record without asking any agent; nothing is stopped anywhere. For a VM a live agent manages (its node is back) it is a 409, and nothing is forgotten: a DELETE without it destroys the VM. false, or absent: a VM listed with node_silent_since is a 409 and stays listed.
         * @example true
         */
        forget?: 'true' | 'false';
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
      /** @description Destroyed (or already gone from its agent); with ?forget=true, a VM of a node that dropped out forgotten. */
      204: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      /**
       * @description - vm_id is not a fleet id.
       *     - forget is neither true nor false.
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
      /** @description Only with a tenant's token: ?forget=true is the operator's (a VM forgotten leaves its tenant's quota while it may still run). */
      403: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Forbidden",
           *       "message": "?forget=true needs the API token (VM_FLEET_API_TOKEN): tenant acme's token cannot do it",
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
      /**
       * @description - The VM is listed with node_silent_since: its node has dropped out (silent for more than 30 s), or its node id heartbeats again from another agent that does not list it. No agent can destroy it, and its QEMU may still run. The record is kept.
       *     - ?forget=true for a VM a live agent manages (its node is back): nothing is forgotten.
       */
      409: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail. */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "error": "Bad Gateway",
           *       "message": "agent of node example-node-01 could not be reached",
           *       "statusCode": 502
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
}
