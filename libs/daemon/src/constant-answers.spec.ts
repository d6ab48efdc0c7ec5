import 'reflect-metadata';
import { Controller, Get, HttpCode, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import request from 'supertest';
import { replyConstantsSerialized } from './constant-answers';

const CONSTANT = Object.freeze({ accepted: true, note: 'é' });

@Controller()
class AnswersController {
  @Post('constant')
  @HttpCode(200)
  constant(): object {
    return CONSTANT;
  }

  @Post('fresh')
  @HttpCode(200)
  fresh(): object {
    return { ...CONSTANT };
  }

  @Post('created')
  created(): object {
    return CONSTANT;
  }

  @Get('constant')
  read(): object {
    return CONSTANT;
  }
}

@Module({ controllers: [AnswersController] })
class AnswersModule {}

describe('replyConstantsSerialized', () => {
  let app: NestExpressApplication;

  beforeAll(async () => {
    app = await NestFactory.create<NestExpressApplication>(AnswersModule, { logger: false });
    app.set('etag', false);
    app.disable('x-powered-by');
    replyConstantsSerialized(app, [CONSTANT]);
    await app.init();
  });

  afterAll(() => app.close());

  function headersOf(response: request.Response): Record<string, unknown> {
    const { date: _date, ...headers } = response.headers as Record<string, unknown>;
    return headers;
  }

  it('answers a constant with the bytes and headers res.json gives an equal object', async () => {
    const server = app.getHttpServer();
    const fresh = await request(server).post('/fresh');
    for (const path of ['/constant', '/created']) {
      const constant = await request(server).post(path);
      expect(constant.status).toBe(path === '/created' ? 201 : 200);
      expect(constant.text).toBe(fresh.text);
      expect(headersOf(constant)).toEqual(headersOf(fresh));
    }
    expect(fresh.text).toBe('{"accepted":true,"note":"é"}');
    expect(fresh.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('leaves a GET to Express (its freshness rules)', async () => {
    const read = await request(app.getHttpServer()).get('/constant');
    expect(read.status).toBe(200);
    expect(read.text).toBe(JSON.stringify(CONSTANT));
  });
});
