import { ApiProperty } from './openapi-decorators';

/** Every error either daemon answers: JSON with a message naming the field or id at fault. */
export class ErrorBody {
  @ApiProperty({ type: 'integer', example: 404 })
  statusCode!: number;

  @ApiProperty({ example: 'Not Found' })
  error!: string;

  @ApiProperty({ example: 'node compute-west-09 is not enrolled (or silent for more than 30 s)' })
  message!: string;
}
