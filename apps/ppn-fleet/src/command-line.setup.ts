import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { InjectCommander } from 'nest-commander';

/** What this setup uses of a commander Command (nest-commander's own copy of commander). */
interface CommandLine {
  name(name: string): unknown;
  commands: readonly CommandLine[];
  exitOverride(): unknown;
  showHelpAfterError(message: string): unknown;
}

/**
 * The command line as a whole: its name, and for every command (nest-commander builds each on
 * its own, so none inherits from the program) a usage error thrown rather than exiting, so one
 * place maps every outcome to the exit codes (run-cli.ts).
 */
@Injectable()
export class CommandLineSetup implements OnApplicationBootstrap {
  constructor(@InjectCommander() private readonly program: CommandLine) {}

  onApplicationBootstrap(): void {
    this.program.name('ppn-fleet');
    const configure = (command: CommandLine): void => {
      command.exitOverride();
      command.showHelpAfterError('(add --help for usage)');
      command.commands.forEach(configure);
    };
    configure(this.program);
  }
}
