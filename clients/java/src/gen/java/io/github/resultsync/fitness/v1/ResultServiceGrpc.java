package io.github.resultsync.fitness.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ResultService is the write path other platform services call to record,
 * correct, delete and read fitness results. Every change commits, in one local
 * transaction on the shard that owns the result (routed by data_id, so a
 * data_id is recorded once whatever its school), the business row, its new
 * version, the campaign revision and an outbox row holding the full-state
 * event of exactly that version.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ResultServiceGrpc {

  private ResultServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fitness.v1.ResultService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.RecordResultRequest,
      io.github.resultsync.fitness.v1.RecordResultResponse> getRecordResultMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RecordResult",
      requestType = io.github.resultsync.fitness.v1.RecordResultRequest.class,
      responseType = io.github.resultsync.fitness.v1.RecordResultResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.RecordResultRequest,
      io.github.resultsync.fitness.v1.RecordResultResponse> getRecordResultMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.RecordResultRequest, io.github.resultsync.fitness.v1.RecordResultResponse> getRecordResultMethod;
    if ((getRecordResultMethod = ResultServiceGrpc.getRecordResultMethod) == null) {
      synchronized (ResultServiceGrpc.class) {
        if ((getRecordResultMethod = ResultServiceGrpc.getRecordResultMethod) == null) {
          ResultServiceGrpc.getRecordResultMethod = getRecordResultMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.RecordResultRequest, io.github.resultsync.fitness.v1.RecordResultResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RecordResult"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.RecordResultRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.RecordResultResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ResultServiceMethodDescriptorSupplier("RecordResult"))
              .build();
        }
      }
    }
    return getRecordResultMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CorrectResultRequest,
      io.github.resultsync.fitness.v1.CorrectResultResponse> getCorrectResultMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CorrectResult",
      requestType = io.github.resultsync.fitness.v1.CorrectResultRequest.class,
      responseType = io.github.resultsync.fitness.v1.CorrectResultResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CorrectResultRequest,
      io.github.resultsync.fitness.v1.CorrectResultResponse> getCorrectResultMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.CorrectResultRequest, io.github.resultsync.fitness.v1.CorrectResultResponse> getCorrectResultMethod;
    if ((getCorrectResultMethod = ResultServiceGrpc.getCorrectResultMethod) == null) {
      synchronized (ResultServiceGrpc.class) {
        if ((getCorrectResultMethod = ResultServiceGrpc.getCorrectResultMethod) == null) {
          ResultServiceGrpc.getCorrectResultMethod = getCorrectResultMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.CorrectResultRequest, io.github.resultsync.fitness.v1.CorrectResultResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CorrectResult"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CorrectResultRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.CorrectResultResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ResultServiceMethodDescriptorSupplier("CorrectResult"))
              .build();
        }
      }
    }
    return getCorrectResultMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.DeleteResultRequest,
      io.github.resultsync.fitness.v1.DeleteResultResponse> getDeleteResultMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteResult",
      requestType = io.github.resultsync.fitness.v1.DeleteResultRequest.class,
      responseType = io.github.resultsync.fitness.v1.DeleteResultResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.DeleteResultRequest,
      io.github.resultsync.fitness.v1.DeleteResultResponse> getDeleteResultMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.DeleteResultRequest, io.github.resultsync.fitness.v1.DeleteResultResponse> getDeleteResultMethod;
    if ((getDeleteResultMethod = ResultServiceGrpc.getDeleteResultMethod) == null) {
      synchronized (ResultServiceGrpc.class) {
        if ((getDeleteResultMethod = ResultServiceGrpc.getDeleteResultMethod) == null) {
          ResultServiceGrpc.getDeleteResultMethod = getDeleteResultMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.DeleteResultRequest, io.github.resultsync.fitness.v1.DeleteResultResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteResult"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.DeleteResultRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.DeleteResultResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ResultServiceMethodDescriptorSupplier("DeleteResult"))
              .build();
        }
      }
    }
    return getDeleteResultMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetResultRequest,
      io.github.resultsync.fitness.v1.GetResultResponse> getGetResultMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetResult",
      requestType = io.github.resultsync.fitness.v1.GetResultRequest.class,
      responseType = io.github.resultsync.fitness.v1.GetResultResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetResultRequest,
      io.github.resultsync.fitness.v1.GetResultResponse> getGetResultMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetResultRequest, io.github.resultsync.fitness.v1.GetResultResponse> getGetResultMethod;
    if ((getGetResultMethod = ResultServiceGrpc.getGetResultMethod) == null) {
      synchronized (ResultServiceGrpc.class) {
        if ((getGetResultMethod = ResultServiceGrpc.getGetResultMethod) == null) {
          ResultServiceGrpc.getGetResultMethod = getGetResultMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.GetResultRequest, io.github.resultsync.fitness.v1.GetResultResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetResult"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetResultRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetResultResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ResultServiceMethodDescriptorSupplier("GetResult"))
              .build();
        }
      }
    }
    return getGetResultMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListResultsRequest,
      io.github.resultsync.fitness.v1.ListResultsResponse> getListResultsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListResults",
      requestType = io.github.resultsync.fitness.v1.ListResultsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListResultsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListResultsRequest,
      io.github.resultsync.fitness.v1.ListResultsResponse> getListResultsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListResultsRequest, io.github.resultsync.fitness.v1.ListResultsResponse> getListResultsMethod;
    if ((getListResultsMethod = ResultServiceGrpc.getListResultsMethod) == null) {
      synchronized (ResultServiceGrpc.class) {
        if ((getListResultsMethod = ResultServiceGrpc.getListResultsMethod) == null) {
          ResultServiceGrpc.getListResultsMethod = getListResultsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListResultsRequest, io.github.resultsync.fitness.v1.ListResultsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListResults"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListResultsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListResultsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ResultServiceMethodDescriptorSupplier("ListResults"))
              .build();
        }
      }
    }
    return getListResultsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ResultServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ResultServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ResultServiceStub>() {
        @java.lang.Override
        public ResultServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ResultServiceStub(channel, callOptions);
        }
      };
    return ResultServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ResultServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ResultServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ResultServiceBlockingV2Stub>() {
        @java.lang.Override
        public ResultServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ResultServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ResultServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ResultServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ResultServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ResultServiceBlockingStub>() {
        @java.lang.Override
        public ResultServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ResultServiceBlockingStub(channel, callOptions);
        }
      };
    return ResultServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ResultServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ResultServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ResultServiceFutureStub>() {
        @java.lang.Override
        public ResultServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ResultServiceFutureStub(channel, callOptions);
        }
      };
    return ResultServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ResultService is the write path other platform services call to record,
   * correct, delete and read fitness results. Every change commits, in one local
   * transaction on the shard that owns the result (routed by data_id, so a
   * data_id is recorded once whatever its school), the business row, its new
   * version, the campaign revision and an outbox row holding the full-state
   * event of exactly that version.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Records a new result at version 1. ALREADY_EXISTS when data_id is taken.
     * Idempotent per request_id: a retry returns the original outcome.
     * </pre>
     */
    default void recordResult(io.github.resultsync.fitness.v1.RecordResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.RecordResultResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRecordResultMethod(), responseObserver);
    }

    /**
     * <pre>
     * Corrects a result. expected_version must equal the current version,
     * otherwise ABORTED with a VersionConflict detail (re-read, then retry with
     * the current version). Idempotent per request_id.
     * </pre>
     */
    default void correctResult(io.github.resultsync.fitness.v1.CorrectResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CorrectResultResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCorrectResultMethod(), responseObserver);
    }

    /**
     * <pre>
     * Deletes a result by writing a new version with is_deleted = true (a
     * versioned tombstone, retained). Same concurrency rules as CorrectResult.
     * </pre>
     */
    default void deleteResult(io.github.resultsync.fitness.v1.DeleteResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.DeleteResultResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteResultMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns the current state of one result, tombstones included.
     * </pre>
     */
    default void getResult(io.github.resultsync.fitness.v1.GetResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetResultResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetResultMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the results of a campaign, optionally narrowed by school and project,
     * ordered by data_id.
     * </pre>
     */
    default void listResults(io.github.resultsync.fitness.v1.ListResultsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListResultsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListResultsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ResultService.
   * <pre>
   * ResultService is the write path other platform services call to record,
   * correct, delete and read fitness results. Every change commits, in one local
   * transaction on the shard that owns the result (routed by data_id, so a
   * data_id is recorded once whatever its school), the business row, its new
   * version, the campaign revision and an outbox row holding the full-state
   * event of exactly that version.
   * </pre>
   */
  public static abstract class ResultServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ResultServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ResultService.
   * <pre>
   * ResultService is the write path other platform services call to record,
   * correct, delete and read fitness results. Every change commits, in one local
   * transaction on the shard that owns the result (routed by data_id, so a
   * data_id is recorded once whatever its school), the business row, its new
   * version, the campaign revision and an outbox row holding the full-state
   * event of exactly that version.
   * </pre>
   */
  public static final class ResultServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ResultServiceStub> {
    private ResultServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ResultServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ResultServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Records a new result at version 1. ALREADY_EXISTS when data_id is taken.
     * Idempotent per request_id: a retry returns the original outcome.
     * </pre>
     */
    public void recordResult(io.github.resultsync.fitness.v1.RecordResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.RecordResultResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRecordResultMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Corrects a result. expected_version must equal the current version,
     * otherwise ABORTED with a VersionConflict detail (re-read, then retry with
     * the current version). Idempotent per request_id.
     * </pre>
     */
    public void correctResult(io.github.resultsync.fitness.v1.CorrectResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CorrectResultResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCorrectResultMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Deletes a result by writing a new version with is_deleted = true (a
     * versioned tombstone, retained). Same concurrency rules as CorrectResult.
     * </pre>
     */
    public void deleteResult(io.github.resultsync.fitness.v1.DeleteResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.DeleteResultResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteResultMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns the current state of one result, tombstones included.
     * </pre>
     */
    public void getResult(io.github.resultsync.fitness.v1.GetResultRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetResultResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetResultMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the results of a campaign, optionally narrowed by school and project,
     * ordered by data_id.
     * </pre>
     */
    public void listResults(io.github.resultsync.fitness.v1.ListResultsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListResultsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListResultsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ResultService.
   * <pre>
   * ResultService is the write path other platform services call to record,
   * correct, delete and read fitness results. Every change commits, in one local
   * transaction on the shard that owns the result (routed by data_id, so a
   * data_id is recorded once whatever its school), the business row, its new
   * version, the campaign revision and an outbox row holding the full-state
   * event of exactly that version.
   * </pre>
   */
  public static final class ResultServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ResultServiceBlockingV2Stub> {
    private ResultServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ResultServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ResultServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Records a new result at version 1. ALREADY_EXISTS when data_id is taken.
     * Idempotent per request_id: a retry returns the original outcome.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.RecordResultResponse recordResult(io.github.resultsync.fitness.v1.RecordResultRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRecordResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Corrects a result. expected_version must equal the current version,
     * otherwise ABORTED with a VersionConflict detail (re-read, then retry with
     * the current version). Idempotent per request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CorrectResultResponse correctResult(io.github.resultsync.fitness.v1.CorrectResultRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCorrectResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Deletes a result by writing a new version with is_deleted = true (a
     * versioned tombstone, retained). Same concurrency rules as CorrectResult.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.DeleteResultResponse deleteResult(io.github.resultsync.fitness.v1.DeleteResultRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns the current state of one result, tombstones included.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetResultResponse getResult(io.github.resultsync.fitness.v1.GetResultRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the results of a campaign, optionally narrowed by school and project,
     * ordered by data_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListResultsResponse listResults(io.github.resultsync.fitness.v1.ListResultsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListResultsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ResultService.
   * <pre>
   * ResultService is the write path other platform services call to record,
   * correct, delete and read fitness results. Every change commits, in one local
   * transaction on the shard that owns the result (routed by data_id, so a
   * data_id is recorded once whatever its school), the business row, its new
   * version, the campaign revision and an outbox row holding the full-state
   * event of exactly that version.
   * </pre>
   */
  public static final class ResultServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ResultServiceBlockingStub> {
    private ResultServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ResultServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ResultServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Records a new result at version 1. ALREADY_EXISTS when data_id is taken.
     * Idempotent per request_id: a retry returns the original outcome.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.RecordResultResponse recordResult(io.github.resultsync.fitness.v1.RecordResultRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRecordResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Corrects a result. expected_version must equal the current version,
     * otherwise ABORTED with a VersionConflict detail (re-read, then retry with
     * the current version). Idempotent per request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.CorrectResultResponse correctResult(io.github.resultsync.fitness.v1.CorrectResultRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCorrectResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Deletes a result by writing a new version with is_deleted = true (a
     * versioned tombstone, retained). Same concurrency rules as CorrectResult.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.DeleteResultResponse deleteResult(io.github.resultsync.fitness.v1.DeleteResultRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns the current state of one result, tombstones included.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetResultResponse getResult(io.github.resultsync.fitness.v1.GetResultRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetResultMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the results of a campaign, optionally narrowed by school and project,
     * ordered by data_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListResultsResponse listResults(io.github.resultsync.fitness.v1.ListResultsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListResultsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ResultService.
   * <pre>
   * ResultService is the write path other platform services call to record,
   * correct, delete and read fitness results. Every change commits, in one local
   * transaction on the shard that owns the result (routed by data_id, so a
   * data_id is recorded once whatever its school), the business row, its new
   * version, the campaign revision and an outbox row holding the full-state
   * event of exactly that version.
   * </pre>
   */
  public static final class ResultServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ResultServiceFutureStub> {
    private ResultServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ResultServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ResultServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Records a new result at version 1. ALREADY_EXISTS when data_id is taken.
     * Idempotent per request_id: a retry returns the original outcome.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.RecordResultResponse> recordResult(
        io.github.resultsync.fitness.v1.RecordResultRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRecordResultMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Corrects a result. expected_version must equal the current version,
     * otherwise ABORTED with a VersionConflict detail (re-read, then retry with
     * the current version). Idempotent per request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.CorrectResultResponse> correctResult(
        io.github.resultsync.fitness.v1.CorrectResultRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCorrectResultMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Deletes a result by writing a new version with is_deleted = true (a
     * versioned tombstone, retained). Same concurrency rules as CorrectResult.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.DeleteResultResponse> deleteResult(
        io.github.resultsync.fitness.v1.DeleteResultRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteResultMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns the current state of one result, tombstones included.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.GetResultResponse> getResult(
        io.github.resultsync.fitness.v1.GetResultRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetResultMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the results of a campaign, optionally narrowed by school and project,
     * ordered by data_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListResultsResponse> listResults(
        io.github.resultsync.fitness.v1.ListResultsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListResultsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_RECORD_RESULT = 0;
  private static final int METHODID_CORRECT_RESULT = 1;
  private static final int METHODID_DELETE_RESULT = 2;
  private static final int METHODID_GET_RESULT = 3;
  private static final int METHODID_LIST_RESULTS = 4;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_RECORD_RESULT:
          serviceImpl.recordResult((io.github.resultsync.fitness.v1.RecordResultRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.RecordResultResponse>) responseObserver);
          break;
        case METHODID_CORRECT_RESULT:
          serviceImpl.correctResult((io.github.resultsync.fitness.v1.CorrectResultRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.CorrectResultResponse>) responseObserver);
          break;
        case METHODID_DELETE_RESULT:
          serviceImpl.deleteResult((io.github.resultsync.fitness.v1.DeleteResultRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.DeleteResultResponse>) responseObserver);
          break;
        case METHODID_GET_RESULT:
          serviceImpl.getResult((io.github.resultsync.fitness.v1.GetResultRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetResultResponse>) responseObserver);
          break;
        case METHODID_LIST_RESULTS:
          serviceImpl.listResults((io.github.resultsync.fitness.v1.ListResultsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListResultsResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getRecordResultMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.RecordResultRequest,
              io.github.resultsync.fitness.v1.RecordResultResponse>(
                service, METHODID_RECORD_RESULT)))
        .addMethod(
          getCorrectResultMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.CorrectResultRequest,
              io.github.resultsync.fitness.v1.CorrectResultResponse>(
                service, METHODID_CORRECT_RESULT)))
        .addMethod(
          getDeleteResultMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.DeleteResultRequest,
              io.github.resultsync.fitness.v1.DeleteResultResponse>(
                service, METHODID_DELETE_RESULT)))
        .addMethod(
          getGetResultMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.GetResultRequest,
              io.github.resultsync.fitness.v1.GetResultResponse>(
                service, METHODID_GET_RESULT)))
        .addMethod(
          getListResultsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListResultsRequest,
              io.github.resultsync.fitness.v1.ListResultsResponse>(
                service, METHODID_LIST_RESULTS)))
        .build();
  }

  private static abstract class ResultServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ResultServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.github.resultsync.fitness.v1.ResultProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ResultService");
    }
  }

  private static final class ResultServiceFileDescriptorSupplier
      extends ResultServiceBaseDescriptorSupplier {
    ResultServiceFileDescriptorSupplier() {}
  }

  private static final class ResultServiceMethodDescriptorSupplier
      extends ResultServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ResultServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (ResultServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ResultServiceFileDescriptorSupplier())
              .addMethod(getRecordResultMethod())
              .addMethod(getCorrectResultMethod())
              .addMethod(getDeleteResultMethod())
              .addMethod(getGetResultMethod())
              .addMethod(getListResultsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
