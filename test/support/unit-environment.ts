import { TestEnvironment } from 'jest-environment-node';
import type { Circus } from '@jest/types';

/**
 * jest testEnvironment of the unit tier: what the code under test logs through Nest's Logger
 * (collected by unit-spec.setup.ts into `__unitSpecLogs`) is printed only with a test that
 * failed, so a passing run prints jest's summary alone and an expected warning of a fixture
 * (a refused QEMU start, a failing disk) never reads like a real failure.
 */
export default class UnitEnvironment extends TestEnvironment {
  private readonly logs: string[] = [];

  override async setup(): Promise<void> {
    await super.setup();
    this.global.__unitSpecLogs = this.logs;
  }

  handleTestEvent(event: Circus.Event): void {
    if (event.name !== 'test_done') return;
    // Logs of the hooks before a test go with it, so a failing beforeAll shows its own.
    if (event.test.errors.length > 0 && this.logs.length > 0) {
      process.stderr.write(
        `What "${event.test.name}" logged:\n${this.logs.map((line) => `  ${line}\n`).join('')}`,
      );
    }
    this.logs.length = 0;
  }
}
