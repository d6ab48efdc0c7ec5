/**
 * Where the `ppn_host_vms` gauge reads this node's VM states at scrape time. Bound by the VMs'
 * module, so the metrics never import the VMs (which count their spawns through HostMetrics).
 */
export abstract class VmStatesSource {
  /** Each VM's state as listed now; a scrape only reads, it never reconciles. */
  abstract states(): Promise<string[]>;

  /** How many VMs are in a crash loop now (listed Error, retried at the backoff pace). */
  abstract crashLooping(): Promise<number>;

  /** How many VMs are paused on a full disk now (listed Error, resumed once there is room). */
  abstract pausedOnFullDisk(): Promise<number>;
}
