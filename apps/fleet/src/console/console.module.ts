import { Module } from '@nestjs/common';
import { FleetConfig } from '../config/fleet.config';
import { OperationsModule } from '../operations/operations.module';
import { NodeDrainModule } from '../drains/node-drain.module';
import { VmMoveModule } from '../moves/vm-move.module';
import { ConsoleMovesController } from './console-moves.controller';
import { ConsoleController } from './console.controller';
import { ConsoleActionsController } from './console-actions.controller';
import { ConsoleService } from './console.service';
import { ConsoleSessions } from './console-session';
import { ConsoleSessionGuard } from './console-session.guard';
import { LoginBackoff } from './login-backoff';
import { ConsoleTerminals } from './console-terminals';

/**
 * The web console on the operations listener: its pages and assets (ConsoleController) and its
 * actions (ConsoleActionsController)
 * over the same services as the API and the operations routes (ConsoleService).
 */
@Module({
  imports: [OperationsModule, VmMoveModule, NodeDrainModule],
  controllers: [ConsoleController, ConsoleActionsController, ConsoleMovesController],
  providers: [
    ConsoleService,
    ConsoleSessionGuard,
    LoginBackoff,
    ConsoleTerminals,
    {
      provide: ConsoleSessions,
      inject: [FleetConfig],
      // Signed for VM_FLEET_API_TOKEN and kept in this process: a new token, or a restart, ends every session.
      useFactory: (config: FleetConfig) => new ConsoleSessions(config.apiToken),
    },
  ],
})
export class ConsoleModule {}
