import { Body, Controller, Get, Headers, HttpCode, Inject, Post, Query } from '@nestjs/common';
import {
  COMMAND_ID_HEADER,
  applyProgressRules,
  parseCommandId,
  parseProgressDetail,
  validateEmptyRequest,
  validateStartRequest,
} from '@sync/contracts';
import { ApiOperationDocs } from '../openapi/api-operations';
import { EngineHolder } from '../engine/engine-holder';
import { CLUSTER_NAMES } from '../engine/engine.tokens';
import { SUCCESS, type ProgressBody, type SuccessBody } from './api-envelope';

/**
 * `/api/v1`: validate the body, call the engine, answer the envelope. State rules live behind the
 * engine facade; every failure is an ApiError rendered by ApiExceptionFilter, and a request that
 * fails validation never reaches the engine, so it changes nothing.
 */
@Controller()
export class SyncController {
  constructor(
    private readonly engines: EngineHolder,
    @Inject(CLUSTER_NAMES) private readonly clusterNames: readonly string[],
  ) {}

  @Post('start')
  @HttpCode(200)
  @ApiOperationDocs('start')
  async start(
    @Body() body: unknown,
    @Headers(COMMAND_ID_HEADER) commandId?: string,
  ): Promise<SuccessBody> {
    const request = validateStartRequest(body, { clusterNames: this.clusterNames });
    await this.engines.current().start(request, { commandId: parseCommandId(commandId) });
    return SUCCESS;
  }

  @Get('progress')
  @ApiOperationDocs('progress')
  progress(@Query('detail') detail?: unknown): ProgressBody {
    const options = parseProgressDetail(detail);
    return {
      success: true,
      progress: applyProgressRules(this.engines.current().progress(options)),
    };
  }

  @Post('pause')
  @HttpCode(200)
  @ApiOperationDocs('pause')
  async pause(
    @Body() body: unknown,
    @Headers(COMMAND_ID_HEADER) commandId?: string,
  ): Promise<SuccessBody> {
    validateEmptyRequest(body, 'pause');
    await this.engines.current().pause({ commandId: parseCommandId(commandId) });
    return SUCCESS;
  }

  @Post('resume')
  @HttpCode(200)
  @ApiOperationDocs('resume')
  async resume(
    @Body() body: unknown,
    @Headers(COMMAND_ID_HEADER) commandId?: string,
  ): Promise<SuccessBody> {
    validateEmptyRequest(body, 'resume');
    await this.engines.current().resume({ commandId: parseCommandId(commandId) });
    return SUCCESS;
  }

  @Post('commit')
  @HttpCode(200)
  @ApiOperationDocs('commit')
  async commit(
    @Body() body: unknown,
    @Headers(COMMAND_ID_HEADER) commandId?: string,
  ): Promise<SuccessBody> {
    validateEmptyRequest(body, 'commit');
    await this.engines.current().commit({ commandId: parseCommandId(commandId) });
    return SUCCESS;
  }

  @Post('reverse')
  @HttpCode(200)
  @ApiOperationDocs('reverse')
  async reverse(
    @Body() body: unknown,
    @Headers(COMMAND_ID_HEADER) commandId?: string,
  ): Promise<SuccessBody> {
    validateEmptyRequest(body, 'reverse');
    await this.engines.current().reverse({ commandId: parseCommandId(commandId) });
    return SUCCESS;
  }
}
