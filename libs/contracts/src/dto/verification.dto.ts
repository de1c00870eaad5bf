import { IsIn } from 'class-validator';
import { VERIFICATION_MODES, type VerificationMode } from '../start-request';
import { IsOptionalNotNull, IsStrictBoolean } from '../validation/mongo-validators';

/** The `verification` object of the start body: the embedded verifier, on unless disabled. */
export class VerificationDto {
  @IsStrictBoolean()
  @IsOptionalNotNull()
  enabled?: boolean;

  /** `incremental` (default): the commit re-reads only what changed; `full`: everything. */
  @IsIn(VERIFICATION_MODES, { message: `must be one of ${VERIFICATION_MODES.join(', ')}` })
  @IsOptionalNotNull()
  mode?: VerificationMode;
}
