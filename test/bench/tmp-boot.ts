import { listeningFleetDaemon, stopAllDaemons } from '../support/daemons';
import { measureBootTime } from './boot-time';
async function main(): Promise<void> {
  await listeningFleetDaemon();
  try {
    for (let i = 0; i < Number(process.env.RUNS ?? 1); i++) console.log(JSON.stringify(await measureBootTime()));
  } finally {
    await stopAllDaemons();
  }
}
void main();
