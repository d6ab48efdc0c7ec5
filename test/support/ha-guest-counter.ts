import { sshRun } from './guest-ssh';

/** Where the guest's counter writes: one line a second, `<n> <boot id>`, each synced. */
export const COUNTER_FILE = '$HOME/ha-counter';

/**
 * The commands that start, in the guest, a writer of an increasing number and the boot's id to
 * COUNTER_FILE once a second, each line synced to the disk, going on from the file's last
 * number (a copy's, after a recovery), detached from the SSH session; they return once it wrote
 * a line of this boot. One command a line: a here-document ends only at a line of its own.
 */
const START = [
  'set -e',
  `cat >$HOME/ha-counter.sh <<'EOF'
#!/bin/sh
boot=$(cat /proc/sys/kernel/random/boot_id)
n=$(tail -n 1 ${COUNTER_FILE} 2>/dev/null | cut -d' ' -f1)
n=\${n:-0}
while :; do
  n=$((n + 1))
  echo "$n $boot" >>${COUNTER_FILE}
  sync ${COUNTER_FILE}
  sleep 1
done
EOF`,
  'chmod 0755 $HOME/ha-counter.sh',
  'setsid nohup $HOME/ha-counter.sh >/dev/null 2>&1 </dev/null &',
  `until grep -q " $(cat /proc/sys/kernel/random/boot_id)$" ${COUNTER_FILE} 2>/dev/null; do sleep 0.2; done`,
].join('\n');

/**
 * Starts the writer in the guest (once per boot: the test starts it after each recovery, as
 * the guest's own service would at boot).
 */
export async function startCounter(key: string, host: string, port: number): Promise<void> {
  await sshRun(key, host, port, START);
}

/** One line of the counter file. */
export interface CounterLine {
  n: number;
  boot: string;
}

/** The counter file as the guest reads it now. */
export async function readCounter(key: string, host: string, port: number): Promise<CounterLine[]> {
  const text = await sshRun(key, host, port, `cat ${COUNTER_FILE}`);
  return parseCounter(text);
}

export function parseCounter(text: string): CounterLine[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [n, boot] = line.trim().split(' ');
      return { n: Number(n), boot };
    });
}

/**
 * What the file must show if one writer at a time ever wrote it: every number one more than
 * the line before it (a second writer would repeat or skip numbers), and each boot's lines in
 * one run (a boot never comes back once another began). Returns the problems, none if fine.
 */
export function counterProblems(lines: CounterLine[]): string[] {
  const problems: string[] = [];
  const bootsDone = new Set<string>();
  for (let index = 1; index < lines.length; index++) {
    const [before, line] = [lines[index - 1], lines[index]];
    if (line.n !== before.n + 1) {
      problems.push(`line ${index + 1}: ${line.n} after ${before.n}`);
    }
    if (line.boot !== before.boot) {
      bootsDone.add(before.boot);
      if (bootsDone.has(line.boot)) problems.push(`line ${index + 1}: boot ${line.boot} again`);
    }
  }
  return problems;
}

/** The boots in the file, in order, with the first and last number each wrote. */
export function counterBoots(
  lines: CounterLine[],
): Array<{ boot: string; first: number; last: number }> {
  const boots: Array<{ boot: string; first: number; last: number }> = [];
  for (const { n, boot } of lines) {
    const current = boots.at(-1);
    if (current?.boot === boot) current.last = n;
    else boots.push({ boot, first: n, last: n });
  }
  return boots;
}
