// Generated from openapi/vm-host.openapi.json by `npm run openapi`. Do not edit.
export interface paths {
  '/v1/spawn': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** Accept a VM (state Provisioning) once its files are made, and start it under QEMU after answering */
    post: operations['spawnVm'];
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
    /** This node's VMs, as its heartbeat reports them */
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
    /** Stop every process of the VM, then remove its runtime files (the disk stays) */
    delete: operations['destroyVm'];
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
        'application/json': components['schemas']['CreateVmRequest'];
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
      /** @description A new VM. */
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
      /** @description Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <node token>` or carries another token. */
      401: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description The node cannot hold the VM (the message names ram_mb or vcpu_count and the numbers), or the Idempotency-Key was used for another request. */
      422: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description VM_DISK_DIR may not be written (EACCES, read-only); nothing of the VM was kept. */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description the base image is missing */
      503: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['ErrorBody'];
        };
      };
      /** @description VM_DISK_DIR is full (ENOSPC, quota); nothing of the VM was kept. */
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
  listNodeVms: {
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
          'application/json': components['schemas']['VmRecord'][];
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
    };
  };
  destroyVm: {
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
      /** @description Destroyed: no process of the VM runs any more. */
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
      /** @description Only when VM_FLEET_NODE_TOKEN is set on this daemon: the request lacks `Authorization: Bearer <node token>` or carries another token. */
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
      /** @description A process of the VM outlived SIGKILL; the VM is kept. */
      500: {
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
