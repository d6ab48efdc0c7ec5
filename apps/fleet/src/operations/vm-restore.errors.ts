/**
 * A restore refused by the rules or by the target's agent, in the controller's words: 404 (no
 * record and no copy of the VM), 409 (it still runs on a live node, another restore of it is
 * under way, or the target has a VM of that id), 422 (no such copy or backup where named, a
 * node not live, a copy elsewhere than `to`). Nothing was made, nothing recorded.
 */
export class VmRestoreRefusedError extends Error {
  constructor(
    readonly status: 404 | 409 | 422,
    message: string,
  ) {
    super(message);
  }
}
