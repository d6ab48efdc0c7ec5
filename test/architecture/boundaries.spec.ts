import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

interface Planted {
  filePath: string;
  code: string;
}

interface Linted {
  filePath: string;
  messages: Array<{ ruleId: string | null; message: string }>;
}

const DOMAIN = 'libs/fleet-domain/src/planted.ts';
const DOMAIN_SPEC = 'libs/fleet-domain/src/planted.spec.ts';
const DAEMON = 'libs/daemon/src/planted.ts';
const DAEMON_SPEC = 'libs/daemon/src/planted.spec.ts';
const BASICS = 'libs/api-basics/src/planted.ts';
const BASICS_SPEC = 'libs/api-basics/src/planted.spec.ts';
const FLEET = 'apps/fleet/src/nodes/planted.ts';
const FLEET_SPEC = 'apps/fleet/src/nodes/planted.spec.ts';
const VM_HOST = 'apps/vm-host/src/vms/planted.ts';
const VM_HOST_SPEC = 'apps/vm-host/src/vms/planted.spec.ts';
const E2E = 'test/e2e/planted.e2e-spec.ts';
const CLI = 'apps/ppn-fleet/src/vms/planted.ts';

/** Each forbidden line, where it is planted, and the rule of eslint.config.mjs that refuses it. */
const FORBIDDEN: Array<[string, string, string]> = [
  [DOMAIN, "import { readFileSync } from 'fs';", 'no-restricted-imports'],
  [DOMAIN, "import { randomUUID } from 'crypto';", 'no-restricted-imports'],
  [DOMAIN, "import { readFileSync } from 'node:fs';", 'no-restricted-imports'],
  [DOMAIN, "import { readFile } from 'fs/promises';", 'no-restricted-imports'],
  [DOMAIN, "import { posix } from 'node:path/posix';", 'no-restricted-imports'],
  [DOMAIN, "import { test } from 'node:test';", 'no-restricted-imports'],
  [DOMAIN, "export { EventEmitter } from 'events';", 'no-restricted-imports'],
  [DOMAIN, "import { ApiProperty } from '@nestjs/swagger';", 'no-restricted-imports'],
  [DOMAIN, "import { of } from 'rxjs';", 'no-restricted-imports'],
  [DOMAIN, "import { map } from 'rxjs/operators';", 'no-restricted-imports'],
  [DOMAIN, "import { Injectable } from '@nestjs/common';", 'no-restricted-imports'],
  [DOMAIN, "import { Clock } from '@app/daemon';", 'no-restricted-imports'],
  [DOMAIN, "import { Clock } from '@app/daemon/src/clock';", 'no-restricted-imports'],
  [DOMAIN, "import { SystemClock } from '../../daemon/src/clock';", 'no-restricted-imports'],
  [
    DOMAIN,
    "import { heartbeat } from '../../../test/support/heartbeats';",
    'no-restricted-imports',
  ],
  [DOMAIN, 'export const now = Date.now();', 'no-restricted-syntax'],
  [DOMAIN, 'export const clock = Date.now;', 'no-restricted-syntax'],
  [DOMAIN, 'export const now = new Date();', 'no-restricted-syntax'],
  [DOMAIN, 'export const now = performance.now();', 'no-restricted-syntax'],
  [DOMAIN, 'export const now = globalThis.Date.now();', 'no-restricted-syntax'],
  [DOMAIN, 'export const now = new globalThis.Date();', 'no-restricted-syntax'],
  [DOMAIN, 'export const now = globalThis.Date();', 'no-restricted-syntax'],
  [DOMAIN, "export const now = globalThis['Date'].now();", 'no-restricted-syntax'],
  [DOMAIN, 'export const now = global.performance.now();', 'no-restricted-syntax'],
  [DOMAIN, 'const Clock = Date;\nexport const now = Clock.now();', 'no-restricted-syntax'],
  [DOMAIN, 'export const { now } = Date;', 'no-restricted-syntax'],
  [DOMAIN, 'const { Date: D } = globalThis;\nexport const now = D.now();', 'no-restricted-syntax'],
  [DOMAIN, 'export const home = process.env.HOME;', 'no-restricted-syntax'],
  [DOMAIN, 'export const { env } = process;', 'no-restricted-syntax'],
  [DOMAIN, "export const loaded = import('node:fs');", 'no-restricted-syntax'],
  [DOMAIN, "import { ErrorBody } from '@app/api-basics/error-body';", 'no-restricted-imports'],
  [DOMAIN_SPEC, "import { readFileSync } from 'fs';", 'no-restricted-imports'],
  [DOMAIN_SPEC, 'export const now = Date.now();', 'no-restricted-syntax'],
  [
    DAEMON,
    "import { FakeClock } from '../../../test/support/fake-clock';",
    'no-restricted-imports',
  ],
  [DAEMON, "import { toRfc3339 } from '@app/fleet-domain/rfc3339';", 'no-restricted-imports'],
  [DAEMON, "import { toRfc3339 } from '@app/fleet-domain';", 'no-restricted-imports'],
  [DAEMON, "import type { VmRecord } from '@app/fleet-domain';", 'no-restricted-imports'],
  [DAEMON, "import { ErrorBody } from '../../api-basics/src/error-body';", 'no-restricted-imports'],
  [DAEMON, "import { ErrorBody } from '@app/api-basics/error-body';", 'no-restricted-imports'],
  [DAEMON_SPEC, "import { NodeHeartbeat } from '@app/fleet-domain';", 'no-restricted-imports'],
  [BASICS, "import { readFileSync } from 'node:fs';", 'no-restricted-imports'],
  [BASICS, "import { ApiProperty } from '@nestjs/swagger';", 'no-restricted-imports'],
  [BASICS, "import { Injectable } from '@nestjs/common';", 'no-restricted-imports'],
  [BASICS, "import { Clock } from '@app/daemon';", 'no-restricted-imports'],
  [BASICS, "import { toRfc3339 } from '@app/fleet-domain';", 'no-restricted-imports'],
  [BASICS, "import { toRfc3339 } from '../../fleet-domain/src/rfc3339';", 'no-restricted-imports'],
  [
    BASICS,
    "import { heartbeat } from '../../../test/support/heartbeats';",
    'no-restricted-imports',
  ],
  [BASICS, 'export const now = Date.now();', 'no-restricted-syntax'],
  [BASICS, 'export const home = process.env.HOME;', 'no-restricted-syntax'],
  [BASICS_SPEC, "import { readFileSync } from 'fs';", 'no-restricted-imports'],
  [BASICS_SPEC, "import { toRfc3339 } from '@app/fleet-domain';", 'no-restricted-imports'],
  [
    FLEET,
    "import { FakeClock } from '../../../../test/support/fake-clock';",
    'no-restricted-imports',
  ],
  [FLEET, "import { FakeClock } from 'test/support/fake-clock';", 'no-restricted-imports'],
  [FLEET, "import { Clock } from '@app/daemon/src/clock';", 'no-restricted-imports'],
  [
    FLEET,
    "import { VmsService } from '../../../vm-host/src/vms/vms.service';",
    'no-restricted-imports',
  ],
  [
    VM_HOST,
    "import { FakeClock } from '../../../../test/support/fake-clock';",
    'no-restricted-imports',
  ],
  [VM_HOST, "import { runCli } from '../../../ppn-fleet/src/run-cli';", 'no-restricted-imports'],
  [
    CLI,
    "import { VmsService } from '../../../fleet/src/vms/vms.service';",
    'no-restricted-imports',
  ],
  [
    CLI,
    "import { VmsService } from '../../../vm-host/src/vms/vms.service';",
    'no-restricted-imports',
  ],
  [
    CLI,
    "import { FakeClock } from '../../../../test/support/fake-clock';",
    'no-restricted-imports',
  ],
  [CLI, "import { deriveNodeToken } from '@app/daemon/node-token';", 'no-restricted-imports'],
  [
    VM_HOST_SPEC,
    "export const config = Object.assign(new VmHostConfig(), { nodeId: 'node-a' });",
    'no-restricted-syntax',
  ],
  [FLEET_SPEC, 'export const config = new FleetConfig();', 'no-restricted-syntax'],
  [E2E, 'export const config = new FleetConfig();', 'no-restricted-syntax'],
];

/** Lines the same rules let through, so that they do not refuse more than they should. */
const ALLOWED: Array<[string, string]> = [
  [DOMAIN, "import type { ApiPropertyOptions } from '@nestjs/swagger';"],
  [DOMAIN, "export type { ApiPropertyOptions } from '@nestjs/swagger';"],
  [DOMAIN, "import type { Observable } from 'rxjs';"],
  [DOMAIN, "import { IsInt } from 'class-validator';"],
  [DOMAIN, "import { toRfc3339 } from './rfc3339';"],
  [DOMAIN, "import { emitted } from './events';"],
  [DOMAIN, 'export const epoch = new Date(0);'],
  [DOMAIN, 'export const at = (nowMs: number) => new Date(nowMs).toISOString();'],
  [DOMAIN, "export const at = Date.UTC(2026, 7, 6) + Date.parse('2026-08-06T00:00:00Z');"],
  [DOMAIN_SPEC, "import { heartbeat } from '../../../test/support/heartbeats';"],
  [DOMAIN, "import { ErrorBody } from '@app/api-basics';"],
  [DAEMON, "import { ErrorBody } from '@app/api-basics';"],
  [BASICS, "import type { ApiPropertyOptions } from '@nestjs/swagger';"],
  [BASICS, "import { isUnicastAddress } from './ip-address';"],
  [FLEET, "import { ErrorBody } from '@app/api-basics';"],
  [FLEET, "import { randomUUID } from 'node:crypto';"],
  [FLEET, "import { Clock } from '@app/daemon';"],
  [FLEET_SPEC, "import { FakeClock } from '../../../../test/support/fake-clock';"],
  [CLI, "import type { FleetApi } from '@app/fleet-domain';"],
  [CLI, "import { deriveNodeToken } from '@app/daemon';"],
  [VM_HOST_SPEC, "export const config = vmHostConfig({ VM_NODE_ID: 'node-a' });"],
  [E2E, 'export const config = fleetConfig();'],
  [FLEET, 'export const config = new FleetConfig();'],
];

/** The boundary rules' messages for each planted text, from the real config (lint-texts.mjs). */
function lint(planted: Planted[]): Linted[] {
  const output = execFileSync(process.execPath, [path.join(__dirname, 'lint-texts.mjs')], {
    input: JSON.stringify(planted),
    encoding: 'utf8',
  });
  return JSON.parse(output) as Linted[];
}

describe('eslint.config.mjs boundaries', () => {
  let forbidden: Linted[];
  let allowed: Linted[];

  beforeAll(() => {
    // One child process for every text: loading eslint is most of the time.
    const results = lint([
      ...FORBIDDEN.map(([filePath, code]) => ({ filePath, code: `${code}\n` })),
      ...ALLOWED.map(([filePath, code]) => ({ filePath, code: `${code}\n` })),
    ]);
    forbidden = results.slice(0, FORBIDDEN.length);
    allowed = results.slice(FORBIDDEN.length);
  }, 60_000);

  it.each(FORBIDDEN.map(([filePath, code, rule], index) => ({ filePath, code, rule, index })))(
    'refuses $code in $filePath ($rule)',
    ({ rule, index }) => {
      expect(forbidden[index].messages.map(({ ruleId }) => ruleId)).toContain(rule);
    },
  );

  it.each(ALLOWED.map(([filePath, code], index) => ({ filePath, code, index })))(
    'lets $code through in $filePath',
    ({ index }) => {
      expect(allowed[index].messages).toEqual([]);
    },
  );
});
