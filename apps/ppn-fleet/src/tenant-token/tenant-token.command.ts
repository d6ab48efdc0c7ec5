import {
  EnvironmentVariable,
  IsTenantSecret,
  deriveTenantToken,
  readEnvironment,
} from '@app/daemon';
import { Command, CommandRunner } from 'nest-commander';
import { CliIo } from '../terminal/cli-io';
import { requireFleetId } from '../api/command-options';
import { Terminal } from '../terminal/terminal';

/** The fleet's tenant secret, read as the controller reads it (same rules, same file checks). */
export class TenantSecretConfig {
  @EnvironmentVariable('VM_FLEET_TENANT_SECRET', {
    required: true,
    secret: true,
    validate: IsTenantSecret(),
  })
  secret!: string;
}

@Command({
  name: 'tenant-token',
  arguments: '<tenant_id>',
  argsDescription: { tenant_id: 'the tenant whose token to print' },
  description:
    "print a tenant's token (its bearer token for its own VMs) from VM_FLEET_TENANT_SECRET(_FILE); sends nothing",
})
export class TenantTokenCommand extends CommandRunner {
  constructor(
    private readonly io: CliIo,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  run([tenantId]: string[]): Promise<void> {
    requireFleetId('tenant_id', tenantId);
    // A ConfigurationError goes on to runCli, which makes it a usage error (exit 2).
    const config = readEnvironment(TenantSecretConfig, this.io.env);
    this.terminal.print(deriveTenantToken(config.secret, tenantId));
    return Promise.resolve();
  }
}
