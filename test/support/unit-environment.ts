import { TestEnvironment } from 'jest-environment-node';
import type { Circus } from '@jest/types';

/** What a failed test logged, to print after it; nothing when it logged nothing. */
export function failedTestLogs(testName: string, logs: readonly string[]): string | undefined {
  if (logs.length === 0) return undefined;
  return `What "${testName}" logged:\n${logs.map((line) => `  ${line}\n`).join('')}`;
}

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
    const report = event.test.errors.length > 0 && failedTestLogs(event.test.name, this.logs);
    if (report) process.stderr.write(report);
    this.logs.length = 0;
  }
}
