import createClient, { Client } from 'openapi-fetch';
import type { components, paths } from './fleet-api.generated';

export type HeartbeatBody = components['schemas']['NodeHeartbeat'];

/**
 * The controller's API as the agent sees it, typed from the committed OpenAPI document, so
 * the agent cannot drift from what the controller accepts.
 */
export class FleetClient {
  private readonly client: Client<paths>;

  /** `headers` go with every request: the node token's Authorization, when it is set. */
  constructor(baseUrl: string, headers: Record<string, string> = {}) {
    // A redirect would carry the node token elsewhere: never followed.
    this.client = createClient<paths>({
      baseUrl,
      headers,
      fetch: (request: Request) => fetch(request, { redirect: 'manual' }),
    });
  }

  /** Throws with the reason when the controller cannot be reached or does not answer 200. */
  async sendHeartbeat(body: HeartbeatBody, signal: AbortSignal): Promise<void> {
    const { response, error } = await this.client.POST('/v1/nodes/heartbeat', { body, signal });
    if (!response.ok) {
      const detail = (error as { message?: unknown } | undefined)?.message;
      throw new Error(
        `controller answered ${response.status}${typeof detail === 'string' ? `: ${detail}` : ''}`,
      );
    }
  }
}
