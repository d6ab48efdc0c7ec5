import { ApiProperty } from './openapi-decorators';

/** Every error either daemon answers: JSON with a message naming the field or id at fault. */
export class ErrorBody {
  @ApiProperty({ type: 'integer', description: 'The HTTP status again.' })
  statusCode!: number;

  @ApiProperty({ description: "The status's reason phrase, such as `Not Found`." })
  error!: string;

  @ApiProperty({ description: 'What went wrong, naming the field, header or id at fault.' })
  message!: string;
}
