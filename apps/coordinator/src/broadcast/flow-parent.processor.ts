import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { COMMAND_FLOW_QUEUE } from '@sync/contracts';
import type { Job } from 'bullmq';

/**
 * Completes a command's flow parent once every child is done, with the children's answers
 * (so parents do not pile up, and `waitUntilFinished` on the parent resolves). A child out of
 * retries fails the parent instead (failParentOnFailure): this processor then never runs.
 */
@Processor(COMMAND_FLOW_QUEUE)
export class FlowParentProcessor extends WorkerHost {
  process(job: Job): Promise<Record<string, unknown>> {
    return job.getChildrenValues();
  }

  /** Connection errors are reported once per outage by the coordinator's own connections. */
  @OnWorkerEvent('error')
  onError(): void {}
}
