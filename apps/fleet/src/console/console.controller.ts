import {
  Body,
  Controller,
  Get,
  HttpCode,
  HttpException,
  HttpStatus,
  NotFoundException,
  Param,
  Post,
  Query,
  Req,
  Res,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BearerTokens,
  Clock,
  OPERATOR,
  OwnCredentials,
  packageVersion,
  setCallerOf,
} from '@app/daemon';
import {
  ApiExcludeController,
  FleetVmWithLifeCycle,
  NodeIdParams,
  VmIdParams,
} from '@app/fleet-domain';
import { VM_PAGE_CSP } from '../operations/ops-listener.http';
import { VmCopiesService } from '../operations/vm-copies.service';
import { TenantQuotas } from '../tenants/tenant-quotas.service';
import { VmNotFoundError } from '../vms/vms.errors';
import { ConsoleFiltersQuery, ConsoleSerialQuery, LoginRequest, Outcome } from './console.requests';
import { vmCopiesLive } from './copies.views';
import { tenantsSection } from './tenants.views';
import { ConsoleService } from './console.service';
import {
  ConsoleSessions,
  SESSION_LIFETIME_S,
  clearedSessionCookie,
  sessionCookie,
} from './console-session';
import { ConsoleAccess, ConsoleSessionGuard, scopeOf, validSession } from './console-session.guard';
import {
  ConsoleFilters,
  ConsoleOverview,
  PageContext,
  loginPage,
  notFoundPage,
} from './console.views';
import { nodeLive, nodePage } from './node-page.views';
import { overviewPage } from './overview.views';
import { serialAnswer, vmLive, vmPage } from './vm-page.views';
import { Html } from './html';
import { LoginBackoff } from './login-backoff';

/**
 * The console's stylesheets and scripts, read once: its own from the files shipped beside this
 * code, xterm.js's (the VM page's terminal) from the installed @xterm/xterm package, so the page
 * loads nothing from elsewhere (the package ships those two files: build-packages.ts's assets).
 */
const ASSETS: Readonly<Record<string, { type: string; body: string }>> = Object.fromEntries(
  [
    ['console.css', 'text/css; charset=utf-8', join(__dirname, 'assets', 'console.css')],
    ['console.js', 'text/javascript; charset=utf-8', join(__dirname, 'assets', 'console.js')],
    ['terminal.js', 'text/javascript; charset=utf-8', join(__dirname, 'assets', 'terminal.js')],
    ['xterm.js', 'text/javascript; charset=utf-8', require.resolve('@xterm/xterm/lib/xterm.js')],
    ['xterm.css', 'text/css; charset=utf-8', require.resolve('@xterm/xterm/css/xterm.css')],
  ].map(([name, type, path]) => [
    name,
    // Its source map is not shipped: no reference to it for a browser to ask for.
    { type, body: readFileSync(path, 'utf8').replace(/\n\/\/# sourceMappingURL=\S*\s*$/, '\n') },
  ]),
);

function filtersOf(query: ConsoleFiltersQuery): ConsoleFilters {
  return {
    ...(query.tenant ? { tenant: query.tenant } : {}),
    ...(query.node ? { node: query.node } : {}),
  };
}

/**
 * Whether the page reached the browser over TLS: the listener's own (it has none today), or a
 * proxy in front that says so. A false claim only makes the cookie Secure, which a browser on
 * plain HTTP then does not send back: it cannot weaken the session.
 */
function servedOverTls(req: Request): boolean {
  return req.secure || req.headers['x-forwarded-proto'] === 'https';
}

function sendHtml(res: Response, page: Html, status = 200): void {
  res.status(status).type('html').send(page.text);
}

/**
 * The web console, on the operations listener: its pages at /, /nodes/{id} and /vms/{id}, the
 * parts of them the page refreshes and the serial console (its actions, POST /console/vms...,
 * in ConsoleActionsController), all under a session of its own (see ConsoleSessions) instead of
 * a bearer token, and none in the OpenAPI document.
 */
@ApiExcludeController()
@OwnCredentials()
@UseGuards(ConsoleSessionGuard)
@Controller()
export class ConsoleController {
  private readonly version = packageVersion();

  constructor(
    private readonly console: ConsoleService,
    private readonly sessions: ConsoleSessions,
    private readonly tokens: BearerTokens,
    private readonly clock: Clock,
    private readonly backoff: LoginBackoff,
    private readonly copies: VmCopiesService,
    private readonly tenantQuotas: TenantQuotas,
  ) {}

  private get open(): boolean {
    return !this.tokens.isSet('api');
  }

  private nowS(): number {
    return this.clock.wallNow() / 1000;
  }

  /**
   * The page's session, or a redirect to /login without one. On an open API a session is
   * issued on the spot: it binds the page's CSRF token.
   */
  private pageContext(req: Request, res: Response): PageContext | undefined {
    let session = validSession(this.sessions, req, this.nowS());
    if (session === undefined) {
      if (!this.open) {
        res.redirect(303, '/login');
        return undefined;
      }
      session = this.sessions.issue(this.nowS());
      res.setHeader('Set-Cookie', sessionCookie(session, SESSION_LIFETIME_S, servedOverTls(req)));
    }
    const tenant = this.sessions.tenantOf(session);
    return {
      csrf: this.sessions.csrfTokenOf(session),
      open: this.open,
      version: this.version,
      ...(tenant === undefined ? {} : { tenant }),
    };
  }

  @Get()
  @ConsoleAccess('page')
  async overview(
    @Query() query: ConsoleFiltersQuery,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const context = this.pageContext(req, res);
    if (context === undefined) return;
    const scope = scopeOf(req);
    // The operator sees each tenant's use against its quotas; a tenant, nothing of the others.
    const tenants =
      scope === undefined ? tenantsSection(await this.tenantQuotas.standings()) : undefined;
    sendHtml(res, overviewPage(await this.overviewOf(query, scope), context, tenants));
  }

  @Get('nodes/:node_id')
  @ConsoleAccess('page')
  async node(
    @Param() { node_id }: NodeIdParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const context = this.pageContext(req, res);
    if (context === undefined) return;
    const overview = await this.console.overview({ node: node_id }, this.open);
    // A tenant's session has no node pages (as its token has no /v1/nodes).
    const node = scopeOf(req)
      ? undefined
      : overview.nodes.find((candidate) => candidate.node_id === node_id);
    if (node === undefined) {
      return sendHtml(res, notFoundPage(`No node ${node_id} is stored.`, context), 404);
    }
    sendHtml(res, nodePage(node, overview.vms, overview.nodes, context));
  }

  @Get('vms/:vm_id')
  @ConsoleAccess('page')
  async vm(
    @Param() { vm_id }: VmIdParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const context = this.pageContext(req, res);
    if (context === undefined) return;
    const found = await this.vmOrUndefined(vm_id);
    if (found === undefined) {
      return sendHtml(res, notFoundPage(`No node lists a VM ${vm_id}.`, context), 404);
    }
    const nodes = await this.console.fleetNodes(scopeOf(req));
    // Unreadable now: the section says so at the page's first refresh, which answers the error.
    const copies = await this.copies.shared(vm_id).catch(() => undefined);
    // Its terminal (xterm.js) injects <style> elements: allowed on this page alone.
    res.setHeader('Content-Security-Policy', VM_PAGE_CSP);
    sendHtml(res, vmPage(found, nodes, context, this.clock.wallNow(), copies));
  }

  @Get('login')
  @ConsoleAccess('public')
  login(@Req() req: Request, @Res() res: Response): void {
    if (this.open || validSession(this.sessions, req, this.nowS()) !== undefined) {
      return res.redirect(303, '/');
    }
    sendHtml(res, loginPage(this.version));
  }

  /** The token in, a session cookie out; the token is neither logged nor kept. */
  @Post('login')
  @HttpCode(200)
  @ConsoleAccess('public')
  logIn(
    @Body() { token }: LoginRequest,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Outcome {
    if (this.open) return { message: 'The API is open: no login is needed' };
    const address = req.socket.remoteAddress ?? '';
    const waitMs = this.backoff.waitMs(address);
    if (waitMs > 0) {
      const waitS = Math.ceil(waitMs / 1000);
      res.setHeader('Retry-After', String(waitS));
      throw new HttpException(
        `too many wrong tokens from this address: try again in ${waitS} s`,
        HttpStatus.TOO_MANY_REQUESTS,
      );
    }
    // A tenant's token opens a session confined to that tenant's VMs.
    const tenant = this.tokens.matches('api', token)
      ? undefined
      : this.tokens.tenants?.tenantOf(token);
    if (!this.tokens.matches('api', token) && tenant === undefined) {
      this.backoff.failed(address);
      throw new UnauthorizedException(
        this.tokens.tenants === undefined
          ? 'that is not the API token (VM_FLEET_API_TOKEN)'
          : "that is neither the API token (VM_FLEET_API_TOKEN) nor a tenant's token",
      );
    }
    this.backoff.succeeded(address);
    // The audit log names who logged in.
    setCallerOf(req, tenant === undefined ? OPERATOR : { kind: 'tenant', tenantId: tenant });
    const session = this.sessions.issue(this.nowS(), tenant);
    res.setHeader('Set-Cookie', sessionCookie(session, SESSION_LIFETIME_S, servedOverTls(req)));
    return { message: 'Logged in' };
  }

  @Post('logout')
  @HttpCode(200)
  logOut(@Req() req: Request, @Res({ passthrough: true }) res: Response): Outcome {
    // The guard let only a valid session through: it ends here, not only in this browser.
    const session = validSession(this.sessions, req, this.nowS());
    if (session !== undefined) this.sessions.end(session);
    res.setHeader('Set-Cookie', clearedSessionCookie(servedOverTls(req)));
    return { message: 'Logged out' };
  }

  @Get('console/assets/:name')
  @ConsoleAccess('public')
  asset(@Param('name') name: string, @Res() res: Response): void {
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (asset === undefined) throw new NotFoundException(`no console asset ${name}`);
    res.type(asset.type).send(asset.body);
  }

  @Get('console/fragments/overview')
  async overviewFragment(
    @Query() query: ConsoleFiltersQuery,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    res
      .type('html')
      .send(await this.console.overviewLive(filtersOf(query), this.open, scopeOf(req)));
  }

  @Get('console/fragments/nodes/:node_id')
  async nodeFragment(
    @Param() { node_id }: NodeIdParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const overview = await this.console.overview({ node: node_id }, this.open);
    const node = scopeOf(req)
      ? undefined
      : overview.nodes.find((candidate) => candidate.node_id === node_id);
    if (node === undefined) throw new NotFoundException(`no node ${node_id} is stored`);
    sendHtml(res, nodeLive(node, overview.vms, overview.nodes));
  }

  @Get('console/fragments/vms/:vm_id')
  async vmFragment(
    @Param() { vm_id }: VmIdParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const vm = await this.console.vm(vm_id);
    const nodes = await this.console.fleetNodes(scopeOf(req));
    sendHtml(res, vmLive(vm, nodes, this.clock.wallNow()));
  }

  @Get('console/fragments/vms/:vm_id/copies')
  async vmCopiesFragment(@Param() { vm_id }: VmIdParams, @Res() res: Response): Promise<void> {
    sendHtml(res, vmCopiesLive(await this.copies.shared(vm_id), this.clock.wallNow()));
  }

  @Get('console/vms/:vm_id/serial')
  async serial(
    @Param() { vm_id }: VmIdParams,
    @Query() { from }: ConsoleSerialQuery,
  ): Promise<ReturnType<typeof serialAnswer>> {
    return serialAnswer(await this.console.readConsole(vm_id, from));
  }

  private overviewOf(query: ConsoleFiltersQuery, scope?: string): Promise<ConsoleOverview> {
    return this.console.overview(filtersOf(query), this.open, scope);
  }

  private async vmOrUndefined(vmId: string): Promise<FleetVmWithLifeCycle | undefined> {
    try {
      return await this.console.vm(vmId);
    } catch (error) {
      if (error instanceof VmNotFoundError) return undefined;
      throw error;
    }
  }
}
