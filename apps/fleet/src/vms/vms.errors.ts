/** The placement rules refused the request (422 for an unfit preferred node, 503 for no room). */
export class PlacementRefusedError extends Error {
  constructor(
    readonly reason: 'preferred-node-unfit' | 'no-capacity',
    message: string,
  ) {
    super(message);
  }
}

export class VmNotFoundError extends Error {
  constructor(readonly vmId: string) {
    super(`vm ${vmId} is not listed on any live node`);
  }
}
