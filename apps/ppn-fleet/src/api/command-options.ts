import { ID_PATTERN, ID_RULE } from '@app/fleet-domain';
import { CommandRunner, Option } from 'nest-commander';
import { CliFailure, ExitCode } from './exit-codes';

/**
 * An option or argument commander refuses with this message (its code is what commander
 * recognises), so a bad value is a usage error (exit 2) before anything is sent.
 */
export class InvalidArgument extends Error {
  readonly code = 'commander.invalidArgument';
  readonly exitCode = 2;
}

/** A fleet id (node, VM, tenant), by the wire's own rule. */
export function parseFleetId(value: string): string {
  if (!ID_PATTERN.test(value)) throw new InvalidArgument(`It must be ${ID_RULE}.`);
  return value;
}

/** A command's `<name>` argument checked as a fleet id: a usage error (exit 2) when it is not. */
export function requireFleetId(name: string, value: string): string {
  if (!ID_PATTERN.test(value)) throw new CliFailure(`${name} must be ${ID_RULE}`, ExitCode.Usage);
  return value;
}

/** A whole number from `min` to `max`. */
export function parseInteger(value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new InvalidArgument(`It must be a whole number from ${min} to ${max}.`);
  }
  return Number(value);
}

/** The options of every command that calls the controller. */
export interface ApiOptions {
  endpoint?: string;
  json?: boolean;
}

/** A command that calls the controller: `--endpoint`, the same on every one. */
export abstract class ApiCommand extends CommandRunner {
  @Option({
    flags: '--endpoint <url>',
    description:
      'the controller, an http(s) URL (default: VM_FLEET_ENDPOINT, else http://127.0.0.1:9203)',
  })
  parseEndpoint(value: string): string {
    return value;
  }
}

/** A command that shows what the controller answered: `--json` prints the answer as is. */
export abstract class JsonApiCommand extends ApiCommand {
  @Option({ flags: '--json', description: "print the API's JSON answer as is" })
  parseJson(): boolean {
    return true;
  }
}

/** `--ops-endpoint`: checked with VM_FLEET_OPS_ENDPOINT by readConnection (exit 2, nothing sent). */
export const OPS_ENDPOINT_OPTION = {
  flags: '--ops-endpoint <url>',
  description:
    "the controller's operations listener, an http(s) URL (default: VM_FLEET_OPS_ENDPOINT, else http://127.0.0.1:9206)",
};

/** The options of every command that calls the operations listener. */
export interface OpsOptions {
  opsEndpoint?: string;
}

/** A command that calls the controller's operations listener: `--ops-endpoint`. */
export abstract class OpsCommand extends CommandRunner {
  @Option(OPS_ENDPOINT_OPTION)
  parseOpsEndpoint(value: string): string {
    return value;
  }
}
