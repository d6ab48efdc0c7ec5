import { AgentCallError } from './agent-calls';
import { NodeRefusedVmError } from './vms.errors';

/**
 * What a failed dispatch says of the node: `reason` when the failure is the node's, not the
 * request's (unreachable, no answer, a 5xx, a full disk, no room: it is passed over for a
 * while, the reason named in placement's explanations), and `retry` when another node may take
 * the request without risking a second VM (the agent never saw it, or refused it making
 * nothing). A capacity 422 moves on only for a create without preferred_node (`movesOn`).
 * Undefined for anything else the agent said about the request.
 */
export function nodeFailure(
  error: unknown,
  movesOn = true,
): { reason: string; retry: boolean; mayHaveMadeIt: boolean; notTheNodes?: boolean } | undefined {
  if (error instanceof AgentCallError) {
    // Cut off before any answer (a timeout, a reset): the agent may be making the VM.
    const cutOff = !error.neverReached && error.reason === 'unreachable';
    return { reason: error.reason, retry: error.neverReached, mayHaveMadeIt: cutOff };
  }
  if (error instanceof NodeRefusedVmError) {
    switch (error.agentStatus) {
      case 500:
        return { reason: 'failed', retry: false, mayHaveMadeIt: false };
      // Its disk folder is full: it kept nothing of the VM, another node may have room.
      case 507:
        return { reason: 'disk full (507)', retry: true, mayHaveMadeIt: false };
      // It says it cannot hold the VM (whatever its heartbeat claimed): it made nothing.
      case 422:
        // A host_port it holds (a VM not yet in its heartbeat, another process): the request's
        // problem on that node, not the node's; another node may have the port free.
        if (error.hostPortTaken) {
          return movesOn
            ? {
                reason: 'host_port taken (422)',
                retry: true,
                mayHaveMadeIt: false,
                notTheNodes: true,
              }
            : undefined;
        }
        // A disk_gb below the base image's: the request's, and every node has that image.
        if (error.diskTooSmall) return undefined;
        // Out of host ports or disk room, as out of RAM: the node's state, passed over a while.
        if (!movesOn) return undefined;
        return {
          reason: error.hostPortsExhausted
            ? 'out of free host ports (422)'
            : error.diskRoom
              ? 'no disk room for the VM (422)'
              : 'refused the VM as too big (422)',
          retry: true,
          mayHaveMadeIt: false,
        };
    }
  }
  return undefined;
}
