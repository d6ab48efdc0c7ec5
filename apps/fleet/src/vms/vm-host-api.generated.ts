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
    /**
     * Accept a VM (state Provisioning) once its files are made, and start it under QEMU after answering
     * @description What the fleet controller calls once it has placed a VM on this node. The agent checks the node can hold it (RAM after a 512 MB margin, vCPUs within VM_VCPU_OVERCOMMIT), makes its disk in VM_DISK_DIR (over VM_BASE_IMAGE, or a small blank image when that is unset) and seed ISO, answers with the new VM (state Provisioning), then starts QEMU; the VM's state (Running, or Error) shows in GET /v1/vms and the next heartbeat.
     */
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
     * Stop every process of the VM, then remove its runtime files (the disk stays)
     * @description Stops the VM's QEMU (quit, then SIGTERM, then SIGKILL), also one found by name when the agent lost its pid, and answers only once no process of the VM runs; then removes its runtime files. The VM leaves this node's list and its next heartbeat. The disk image stays in VM_DISK_DIR.
     */
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
}
