import { startTestRun } from './test-run';

/** jest globalSetup of every tier: see test-run.ts. */
export default function globalSetup(): void {
  startTestRun();
}
