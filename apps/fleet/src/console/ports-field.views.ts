import { MAX_PUBLISHED_PORTS, MIN_REQUESTED_HOST_PORT } from '@app/fleet-domain';
import { Html, html } from './html';

/**
 * What the create form's published ports field takes, as `ppn-fleet vm create --port` does:
 * `[host_port:]guest_port[/tcp|udp]`, several separated by commas or spaces. The page's
 * script makes CreateVmRequest's `ports` of it; the API checks them as from any client.
 */
export const PORTS_FIELD_PATTERN =
  '\\s*(?:(?:\\d{1,5}:)?\\d{1,5}(?:/(?:tcp|udp))?(?:[\\s,]+|$))*\\s*';

/** The create form's published ports (beside SSH, always published first). */
export function publishedPortsField(): Html {
  return html`<label for="ports">Published ports (optional)</label>
    <input
      id="ports"
      name="ports"
      data-type="ports"
      maxlength="${MAX_PUBLISHED_PORTS * 18}"
      pattern="${PORTS_FIELD_PATTERN}"
      title="[host_port:]guest_port[/tcp|udp], several separated by commas: 80, 8443:443/tcp, 5353:53/udp. SSH is always published. A host_port from ${MIN_REQUESTED_HOST_PORT}; without one, a free port is chosen."
      placeholder="80, 8443:443/tcp"
      autocomplete="off"
      spellcheck="false"
    />`;
}
