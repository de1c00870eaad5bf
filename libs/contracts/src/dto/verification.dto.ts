import { IsOptionalNotNull, IsStrictBoolean } from '../validation/mongo-validators';

/** The `verification` object of the start body: the embedded verifier, on unless disabled. */
export class VerificationDto {
  @IsStrictBoolean()
  @IsOptionalNotNull()
  enabled?: boolean;
}
