import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { chmodSync, closeSync, fstatSync, openSync, writeSync } from 'node:fs';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { ConfigurationError, pathsOtherThan, recordedCallerOf } from '@app/daemon';
import { HEARTBEAT_PATH, ID_PATTERN } from '@app/fleet-domain';

/** One audited request: one JSON line. Never a token, a body or a query string. */
export interface AuditEntry {
  time: string;
  /** `operator` (the API token, or anyone while the API is open), `tenant`, or `none` (refused before any credential was taken). */
  who: 'operator' | 'tenant' | 'none';
  tenant_id?: string;
  /** `api` (:9203) or `ops` (the operations listener and its web console). */
  listener: 'api' | 'ops';
  method: string;
  /** The path alone, cut to 256 characters. */
  path: string;
  vm_id?: string;
  status: number;
  /** The peer's address. */
  from?: string;
  /**
   * On the summary line of a peer's `none` lines past NONE_LINES_PER_MINUTE: how many of its
   * lines were left out in the minute before.
   */
  left_out?: number;
}

/** The most `who: "none"` lines (refused before any credential) one address writes a minute. */
export const NONE_LINES_PER_MINUTE = 30;
const MINUTE_MS = 60_000;
/** Addresses followed at once; past it the oldest minute's counts are dropped (a flood of addresses). */
const MAX_FOLLOWED_ADDRESSES = 10_000;

const MAX_PATH = 256;

/** The VM a path names (API, operations listener, console), when it is a fleet id. */
function vmIdOfPath(path: string): string | undefined {
  const id = /^\/(?:console\/)?(?:v1\/)?vms\/([^/]+)/.exec(path)?.[1];
  return id !== undefined && ID_PATTERN.test(id) ? id : undefined;
}

/**
 * The audit log (VM_FLEET_AUDIT_LOG, or the controller's log under the context "Audit"): one
 * JSON line per state-changing request (any method but GET, HEAD and OPTIONS) on either
 * listener, the agents' heartbeats aside: who (operator or which tenant), what (method and
 * path), which VM, and the status answered. Refused requests are written too.
 */
export class AuditLog implements OnApplicationShutdown {
  private readonly logger = new Logger('Audit');
  private fd?: number;

  constructor(private readonly path?: string) {
    if (path === undefined) return;
    try {
      this.fd = openSync(path, 'a', 0o600);
      // An existing file keeps its mode on open: made the owner's alone, as every file here.
      if ((fstatSync(this.fd).mode & 0o077) !== 0) chmodSync(path, 0o600);
    } catch (error) {
      throw new ConfigurationError(
        `VM_FLEET_AUDIT_LOG ${path} cannot be used: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
  }

  /** Per address, its minute's start (ms) and its `none` lines in it, written and left out. */
  private readonly noneLines = new Map<
    string,
    { sinceMs: number; written: number; leftOut: number }
  >();

  write(entry: AuditEntry): void {
    if (entry.who === 'none' && !this.admitNone(entry)) return;
    this.append(entry);
  }

  /**
   * Whether a `none` line is written: anyone can send unauthenticated requests, so each address
   * writes NONE_LINES_PER_MINUTE a minute at most; the next minute's first line is preceded by
   * one that says how many were left out.
   */
  private admitNone(entry: AuditEntry): boolean {
    const address = entry.from ?? '';
    const nowMs = Date.parse(entry.time);
    let count = this.noneLines.get(address);
    if (count !== undefined && !(nowMs - count.sinceMs < MINUTE_MS && nowMs >= count.sinceMs)) {
      if (count.leftOut > 0) {
        this.append({ ...entry, path: '(refused requests left out)', left_out: count.leftOut });
      }
      this.noneLines.delete(address);
      count = undefined;
    }
    if (count === undefined) {
      if (this.noneLines.size >= MAX_FOLLOWED_ADDRESSES) this.noneLines.clear();
      count = { sinceMs: nowMs, written: 0, leftOut: 0 };
      this.noneLines.set(address, count);
    }
    if (count.written >= NONE_LINES_PER_MINUTE) {
      count.leftOut += 1;
      return false;
    }
    count.written += 1;
    return true;
  }

  private append(entry: AuditEntry): void {
    const line = JSON.stringify(entry);
    if (this.fd === undefined) {
      this.logger.log(line);
      return;
    }
    try {
      writeSync(this.fd, `${line}\n`);
    } catch (error) {
      // The request is done: the line goes to the controller's log instead of being lost.
      this.logger.warn(
        `VM_FLEET_AUDIT_LOG ${this.path}: ${(error as Error).message}; audit line: ${line}`,
      );
    }
  }

  onApplicationShutdown(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Writes an audit line for each state-changing request `app` answers (see AuditLog). */
export function auditRequests(
  app: NestExpressApplication,
  audit: AuditLog,
  listener: 'api' | 'ops',
  now: () => number = Date.now,
): void {
  const record = (req: Request, res: Response, next: NextFunction): void => {
    const method = req.method;
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') {
      next();
      return;
    }
    const path = (req.originalUrl ?? req.url).split('?')[0];
    let createdVmId: string | undefined;
    // A create's VM is known from its answer only.
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const vmId = (body as { vm_id?: unknown } | null)?.vm_id;
      if (typeof vmId === 'string' && ID_PATTERN.test(vmId)) createdVmId = vmId;
      return json(body);
    };
    res.on('finish', () => {
      const caller = recordedCallerOf(req);
      const entry: AuditEntry = {
        time: new Date(now()).toISOString(),
        who: caller?.kind ?? 'none',
        listener,
        method,
        path: path.slice(0, MAX_PATH),
        status: res.statusCode,
      };
      if (caller?.kind === 'tenant') entry.tenant_id = caller.tenantId;
      const vmId = vmIdOfPath(path) ?? createdVmId;
      if (vmId !== undefined) entry.vm_id = vmId;
      if (req.socket.remoteAddress) entry.from = req.socket.remoteAddress;
      audit.write(entry);
    });
    next();
  };
  // Heartbeats are not audited (the refused ones are counted: RefusedHeartbeatsCounter): on
  // the API listener, the router passes them by this layer.
  if (listener === 'api') app.use(pathsOtherThan(HEARTBEAT_PATH), record);
  else app.use(record);
}
