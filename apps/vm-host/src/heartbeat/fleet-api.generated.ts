// Generated from openapi/fleet.openapi.json by `npm run openapi`. Do not edit.
export interface paths {
  '/v1/fleet': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Every live node and when this view was taken */
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
    /** Every node heard from in the last 30 s */
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
    /** Report a node's state; the first heartbeat enrolls it, each one replaces its record */
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
    /** One node, if heard from in the last 30 s */
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
    /** VMs on live nodes, optionally of one tenant */
    get: operations['listVms'];
    put?: never;
    /** Place a VM on a node and have that node's agent start it */
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
    /** Have the owning node's agent destroy a VM */
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
    CreateVmRequest: {
      /** @default false */
      prefer_kvm: boolean;
      /** @example null */
      preferred_node?: string | null;
      /** @example 2048 */
      ram_mb: number;
      /** @example acme */
      tenant_id?: string | null;
      /** @example 2 */
      vcpu_count: number;
      /** @example web */
      vm_type: string;
    };
    ErrorBody: {
      /** @example Not Found */
      error: string;
      /** @example node compute-west-09 is not enrolled (or silent for more than 30 s) */
      message: string;
      /** @example 404 */
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
    HeartbeatVm: {
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
       * @example 2026-08-06T12:00:00.123456789Z
       */
      started_at: string | null;
      /** @example Running */
      state: components['schemas']['VmState'];
      /** @example acme */
      tenant_id?: string | null;
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
    NodeHeartbeat: {
      /** @example 4f0b6a8e-3c1d-4c53-9a53-2f5d2f0e9d10 */
      boot_id: string;
      /** @example 8 */
      cpu_cores: number;
      /** @example 12.5 */
      cpu_load_pct: number;
      /**
       * @description Any text without control characters.
       * @example compute-west-01
       */
      hostname: string;
      /** @example true */
      kvm_available: boolean;
      /** @example compute-west-01 */
      node_id: string;
      /** @example 32768 */
      ram_total_mb: number;
      /** @example 8192 */
      ram_used_mb: number;
      /**
       * @description Last-resort-only for placement.
       * @default false
       */
      reserved: boolean;
      /** @description Port of the agent's local API; absent means 9204. */
      spawn_port?: number;
      /**
       * Format: date-time
       * @example 2026-08-06T12:00:00.123456789Z
       */
      timestamp_utc: string;
      vms: components['schemas']['HeartbeatVm'][];
      /**
       * @description The node's WireGuard IP address: an IPv4 or IPv6 address literal (no zone, port or prefix). The controller calls the agent at this address only.
       * @example 10.8.0.21
       */
      wg_ip: string;
    };
    NodeRecord: {
      /** @example compute-west-01 */
      hostname: string;
      /** @example true */
      kvm_available: boolean;
      /**
       * Format: date-time
       * @example 2026-08-06T12:00:00.123Z
       */
      last_heartbeat: string;
      /** @example compute-west-01 */
      node_id: string;
      /** @example 24576 */
      ram_available_mb: number;
      /** @example false */
      reserved: boolean;
      /** @example 2 */
      vm_count: number;
      /** @example 10.8.0.21 */
      wg_ip: string;
    };
    VmRecord: {
      /** @default [] */
      host_ports: components['schemas']['HostPort'][];
      /** @example 2048 */
      ram_alloc_mb: number;
      /**
       * Format: date-time
       * @example 2026-08-06T12:00:00.123456789Z
       */
      started_at: string | null;
      /** @example Running */
      state: components['schemas']['VmState'];
      /** @example acme */
      tenant_id?: string | null;
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
  getFleet: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['FleetStatus'];
        };
      };
      /** @description Only when VM_FLEET_API_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <API token>` or carries another token. */
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
  listNodes: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['NodeRecord'][];
        };
      };
      /** @description Only when VM_FLEET_API_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <API token>` or carries another token. */
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
      /** @description Accepted (also when ignored as out of order). */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <node token>` or carries another token. */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
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
          'application/json': components['schemas']['NodeRecord'];
        };
      };
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_API_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <API token>` or carries another token. */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  listVms: {
    parameters: {
      query?: {
        /** @description Only VMs of this tenant. Given once, as a plain value (never as an array or object). */
        tenant_id?: string;
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmRecord'][];
        };
      };
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_API_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <API token>` or carries another token. */
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
          'application/json': components['schemas']['VmRecord'];
        };
      };
      201: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['VmRecord'];
        };
      };
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_API_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <API token>` or carries another token. */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description preferred_node unfit; Idempotency-Key already used with another body; or the node refused the VM (its reason, e.g. ram_mb beyond what it can hold) */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description the node's agent failed */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description no node has room: every live node considered, and why each was passed over */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description the node's disk folder has no room for the VM (the agent's reason) */
      507: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
  deleteVm: {
    parameters: {
      query?: never;
      header?: never;
      path: {
        vm_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Destroyed. */
      204: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description Only when VM_FLEET_API_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <API token>` or carries another token. */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      404: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description agent unreachable; record kept */
      502: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
    };
  };
}
