import { endTestRun } from './test-run';

/** jest globalTeardown of every tier: see test-run.ts. */
export default function globalTeardown(): Promise<void> {
  return endTestRun();
}
