import 'reflect-metadata';
import { Controller, Get, Ip, Module, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request } from 'express';
import request from 'supertest';
import { peerAddressOf } from './peer-address';

@Controller()
class AddressesController {
  @Get('addresses')
  addresses(@Ip() ip: string | undefined, @Req() req: Request): object {
    return { ip, peer: peerAddressOf(req) };
  }
}

@Module({ controllers: [AddressesController] })
class AddressesModule {}

describe('peerAddressOf', () => {
  it.each<[string, unknown]>([
    ['no proxy trusted (the default)', undefined],
    ['a proxy trusted', 'loopback'],
  ])('is what @Ip() gives, with %s, forwarded headers or not', async (_case, trust) => {
    const app = await NestFactory.create<NestExpressApplication>(AddressesModule, {
      logger: false,
    });
    if (trust !== undefined) app.set('trust proxy', trust);
    await app.init();
    try {
      const seen = new Set<string>();
      for (const forwarded of [undefined, '192.0.2.7', '192.0.2.7, 198.51.100.1']) {
        const call = request(app.getHttpServer()).get('/addresses');
        const { body } = await (forwarded ? call.set('X-Forwarded-For', forwarded) : call);
        expect(body.peer).toBe(body.ip);
        seen.add(body.ip);
      }
      // A trusted proxy's forwarded address is taken: both ways were tried.
      expect(seen.size).toBe(trust === undefined ? 1 : 3);
    } finally {
      await app.close();
    }
  });
});
