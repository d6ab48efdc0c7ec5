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

/**
 * What a failed request says of its reach: the status the controller answered with, or, for
 * no answer, `neverSent` when the connection was never made (refused, no route), so the
 * controller saw nothing of the request.
 */
export interface FailureReach {
  status?: number;
  neverSent?: boolean;
}

/** A command's failure: `message` goes to stderr as is, and the CLI exits with `exitCode`. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    readonly reach: FailureReach = {},
  ) {
    super(message);
  }
}
