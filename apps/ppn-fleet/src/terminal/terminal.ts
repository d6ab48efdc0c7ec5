import { Injectable } from '@nestjs/common';
import { CliIo } from './cli-io';
import { printable } from './printable';
import { colourFor } from './style';

/**
 * Where commands write: results to stdout, errors and progress to stderr, so `--json` output
 * and `node-token`'s token stay alone on stdout. Colour is decided per stream.
 */
@Injectable()
export class Terminal {
  private progressShown = false;

  constructor(private readonly io: CliIo) {}

  /** Whether stdout gets colour: a terminal, and NO_COLOR not set. */
  get colour(): boolean {
    return colourFor(this.io.stdout, this.io.env);
  }

  print(text: string): void {
    this.endProgress();
    this.io.stdout.write(`${text}\n`);
  }

  /** Text as it is on stdout, no newline added (a console's bytes as they come); printable. */
  write(text: string): void {
    this.endProgress();
    this.io.stdout.write(text);
  }

  printError(text: string): void {
    this.endProgress();
    this.io.stderr.write(`${text}\n`);
  }

  /**
   * A progress line on stderr: rewritten in place on a terminal, one line per call otherwise
   * (a log then reads as a history). It quotes the controller, so it is made printable.
   */
  progress(text: string): void {
    if (this.io.stderr.isTTY === true) {
      this.io.stderr.write(`\r\u001b[2K${printable(text)}`);
      this.progressShown = true;
    } else {
      this.io.stderr.write(`${printable(text)}\n`);
    }
  }

  private endProgress(): void {
    if (this.progressShown) this.io.stderr.write('\n');
    this.progressShown = false;
  }
}
