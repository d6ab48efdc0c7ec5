/**
 * What a guest's serial console may make the operator's terminal do, when `ppn-fleet vm console
 * --interactive` passes its output through: text, control characters and CSI sequences (colours,
 * the cursor: what a login and a shell need), but no string sequence (OSC, DCS, APC, PM, SOS):
 * those set the window's title, write the clipboard (OSC 52) or talk to the terminal itself, and a
 * hostile guest must not. They are dropped whole, however they are split across reads.
 */
export class SerialOutputFilter {
  /** Inside a string sequence; `escape`: its last byte was ESC (ESC \ ends it). */
  private state: 'text' | 'escape' | 'string' | 'string-escape' = 'text';

  filter(chunk: Buffer): Buffer {
    const kept: number[] = [];
    for (const byte of chunk) {
      switch (this.state) {
        case 'text':
          if (byte === 0x1b) this.state = 'escape';
          // C1 forms of the string introducers (0x90 DCS, 0x98 SOS, 0x9d OSC, 0x9e PM, 0x9f APC)
          // are read as such only by terminals in an 8-bit mode; in UTF-8 they are continuation
          // bytes and kept.
          else kept.push(byte);
          break;
        case 'escape':
          if (byte === 0x5d || byte === 0x50 || byte === 0x5f || byte === 0x5e || byte === 0x58) {
            this.state = 'string';
          } else {
            this.state = byte === 0x1b ? 'escape' : 'text';
            kept.push(0x1b);
            if (byte !== 0x1b) kept.push(byte);
          }
          break;
        case 'string':
          if (byte === 0x07) this.state = 'text';
          else if (byte === 0x1b) this.state = 'string-escape';
          break;
        case 'string-escape':
          this.state = byte === 0x5c ? 'text' : byte === 0x1b ? 'string-escape' : 'string';
          break;
      }
    }
    return Buffer.from(kept);
  }
}

/** Ctrl-], the key that leaves an interactive console (as in telnet and virsh console). */
export const LEAVE_KEY = 0x1d;
