import 'reflect-metadata';
import { runService } from '@sync/service';
import { WORKER_USAGE } from './config/worker-usage';
import { WorkerModule } from './worker.module';

/** Entry point: options → logger → Nest app → listen. No logic lives here. */
void runService({
  name: 'worker',
  usage: WORKER_USAGE,
  // A sync that cannot go on (or a persisted job made for other clusters) does not stop the
  // process: the engine has logged it, and the API keeps answering progress with the named
  // error, so an operator can read what went wrong. Only the process's own faults exit.
  module: (config, logger, _fatal, url) =>
    WorkerModule.forRoot(config, logger, () => undefined, url),
});
