import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { isRequestFor } from '@app/daemon';
import { HEARTBEAT_PATH } from '@app/fleet-domain';
import { FleetMetrics } from './fleet-metrics.service';

/**
 * Counts heartbeats answered 4xx. Those are refused before any service sees them (body parser,
 * validation pipe, guard), so they are counted from the HTTP server's side: every request to
 * the heartbeat route, by the status it was finally answered with.
 */
@Injectable()
export class RefusedHeartbeatsCounter implements OnApplicationBootstrap {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: FleetMetrics,
  ) {}

  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    const metrics = this.metrics;
    // One listener for every heartbeat ('finish' comes once per answer): no closure per request.
    function answered(this: ServerResponse): void {
      if (this.statusCode >= 400 && this.statusCode < 500) metrics.countHeartbeat('refused');
    }
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (request.method !== 'POST' || !isRequestFor(request, HEARTBEAT_PATH)) return;
      response.on('finish', answered);
    });
  }
}
