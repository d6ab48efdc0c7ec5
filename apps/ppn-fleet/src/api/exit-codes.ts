/** What `ppn-fleet` exits with: scripts branch on these, so they never change meaning. */
export enum ExitCode {
  Ok = 0,
  /** The controller answered, and refused (any 4xx or 5xx): its message is printed. */
  Refused = 1,
  /** The command line or the CLI's own settings are wrong: nothing was sent. */
  Usage = 2,
  /** The controller could not be reached, or did not answer in time. */
  Unreachable = 3,
}

/** A command's failure: `message` goes to stderr as is, and the CLI exits with `exitCode`. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}
