#!/usr/bin/env node
import 'reflect-metadata';
import { ProcessIo } from './terminal/cli-io';
import { runCli } from './run-cli';

/** `ppn-fleet`: the operator's command line for a fleet controller. */
runCli(process.argv.slice(2), new ProcessIo()).then(
  (exitCode) => {
    process.exitCode = exitCode;
  },
  (error: unknown) => {
    process.stderr.write(`ppn-fleet: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
