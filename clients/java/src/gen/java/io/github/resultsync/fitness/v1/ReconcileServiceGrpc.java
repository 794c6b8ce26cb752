package io.github.resultsync.fitness.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ReconcileService compares the ClickHouse projection with the authoritative
 * shard tables within a campaign scope and a revision boundary, and classifies
 * every discrepancy it finds. Runs are resources with a state machine; they
 * and their discrepancies are stored in the control database.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ReconcileServiceGrpc {

  private ReconcileServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fitness.v1.ReconcileService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.StartReconciliationRunRequest,
      io.github.resultsync.fitness.v1.StartReconciliationRunResponse> getStartReconciliationRunMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "StartReconciliationRun",
      requestType = io.github.resultsync.fitness.v1.StartReconciliationRunRequest.class,
      responseType = io.github.resultsync.fitness.v1.StartReconciliationRunResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.StartReconciliationRunRequest,
      io.github.resultsync.fitness.v1.StartReconciliationRunResponse> getStartReconciliationRunMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.StartReconciliationRunRequest, io.github.resultsync.fitness.v1.StartReconciliationRunResponse> getStartReconciliationRunMethod;
    if ((getStartReconciliationRunMethod = ReconcileServiceGrpc.getStartReconciliationRunMethod) == null) {
      synchronized (ReconcileServiceGrpc.class) {
        if ((getStartReconciliationRunMethod = ReconcileServiceGrpc.getStartReconciliationRunMethod) == null) {
          ReconcileServiceGrpc.getStartReconciliationRunMethod = getStartReconciliationRunMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.StartReconciliationRunRequest, io.github.resultsync.fitness.v1.StartReconciliationRunResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "StartReconciliationRun"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.StartReconciliationRunRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.StartReconciliationRunResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ReconcileServiceMethodDescriptorSupplier("StartReconciliationRun"))
              .build();
        }
      }
    }
    return getStartReconciliationRunMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetReconciliationRunRequest,
      io.github.resultsync.fitness.v1.GetReconciliationRunResponse> getGetReconciliationRunMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetReconciliationRun",
      requestType = io.github.resultsync.fitness.v1.GetReconciliationRunRequest.class,
      responseType = io.github.resultsync.fitness.v1.GetReconciliationRunResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetReconciliationRunRequest,
      io.github.resultsync.fitness.v1.GetReconciliationRunResponse> getGetReconciliationRunMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetReconciliationRunRequest, io.github.resultsync.fitness.v1.GetReconciliationRunResponse> getGetReconciliationRunMethod;
    if ((getGetReconciliationRunMethod = ReconcileServiceGrpc.getGetReconciliationRunMethod) == null) {
      synchronized (ReconcileServiceGrpc.class) {
        if ((getGetReconciliationRunMethod = ReconcileServiceGrpc.getGetReconciliationRunMethod) == null) {
          ReconcileServiceGrpc.getGetReconciliationRunMethod = getGetReconciliationRunMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.GetReconciliationRunRequest, io.github.resultsync.fitness.v1.GetReconciliationRunResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetReconciliationRun"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetReconciliationRunRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetReconciliationRunResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ReconcileServiceMethodDescriptorSupplier("GetReconciliationRun"))
              .build();
        }
      }
    }
    return getGetReconciliationRunMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListReconciliationRunsRequest,
      io.github.resultsync.fitness.v1.ListReconciliationRunsResponse> getListReconciliationRunsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListReconciliationRuns",
      requestType = io.github.resultsync.fitness.v1.ListReconciliationRunsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListReconciliationRunsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListReconciliationRunsRequest,
      io.github.resultsync.fitness.v1.ListReconciliationRunsResponse> getListReconciliationRunsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListReconciliationRunsRequest, io.github.resultsync.fitness.v1.ListReconciliationRunsResponse> getListReconciliationRunsMethod;
    if ((getListReconciliationRunsMethod = ReconcileServiceGrpc.getListReconciliationRunsMethod) == null) {
      synchronized (ReconcileServiceGrpc.class) {
        if ((getListReconciliationRunsMethod = ReconcileServiceGrpc.getListReconciliationRunsMethod) == null) {
          ReconcileServiceGrpc.getListReconciliationRunsMethod = getListReconciliationRunsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListReconciliationRunsRequest, io.github.resultsync.fitness.v1.ListReconciliationRunsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListReconciliationRuns"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListReconciliationRunsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListReconciliationRunsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ReconcileServiceMethodDescriptorSupplier("ListReconciliationRuns"))
              .build();
        }
      }
    }
    return getListReconciliationRunsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchReconciliationRunRequest,
      io.github.resultsync.fitness.v1.WatchReconciliationRunResponse> getWatchReconciliationRunMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchReconciliationRun",
      requestType = io.github.resultsync.fitness.v1.WatchReconciliationRunRequest.class,
      responseType = io.github.resultsync.fitness.v1.WatchReconciliationRunResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchReconciliationRunRequest,
      io.github.resultsync.fitness.v1.WatchReconciliationRunResponse> getWatchReconciliationRunMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.WatchReconciliationRunRequest, io.github.resultsync.fitness.v1.WatchReconciliationRunResponse> getWatchReconciliationRunMethod;
    if ((getWatchReconciliationRunMethod = ReconcileServiceGrpc.getWatchReconciliationRunMethod) == null) {
      synchronized (ReconcileServiceGrpc.class) {
        if ((getWatchReconciliationRunMethod = ReconcileServiceGrpc.getWatchReconciliationRunMethod) == null) {
          ReconcileServiceGrpc.getWatchReconciliationRunMethod = getWatchReconciliationRunMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.WatchReconciliationRunRequest, io.github.resultsync.fitness.v1.WatchReconciliationRunResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchReconciliationRun"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.WatchReconciliationRunRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.WatchReconciliationRunResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ReconcileServiceMethodDescriptorSupplier("WatchReconciliationRun"))
              .build();
        }
      }
    }
    return getWatchReconciliationRunMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListDiscrepanciesRequest,
      io.github.resultsync.fitness.v1.ListDiscrepanciesResponse> getListDiscrepanciesMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListDiscrepancies",
      requestType = io.github.resultsync.fitness.v1.ListDiscrepanciesRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListDiscrepanciesResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListDiscrepanciesRequest,
      io.github.resultsync.fitness.v1.ListDiscrepanciesResponse> getListDiscrepanciesMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListDiscrepanciesRequest, io.github.resultsync.fitness.v1.ListDiscrepanciesResponse> getListDiscrepanciesMethod;
    if ((getListDiscrepanciesMethod = ReconcileServiceGrpc.getListDiscrepanciesMethod) == null) {
      synchronized (ReconcileServiceGrpc.class) {
        if ((getListDiscrepanciesMethod = ReconcileServiceGrpc.getListDiscrepanciesMethod) == null) {
          ReconcileServiceGrpc.getListDiscrepanciesMethod = getListDiscrepanciesMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListDiscrepanciesRequest, io.github.resultsync.fitness.v1.ListDiscrepanciesResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListDiscrepancies"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListDiscrepanciesRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListDiscrepanciesResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ReconcileServiceMethodDescriptorSupplier("ListDiscrepancies"))
              .build();
        }
      }
    }
    return getListDiscrepanciesMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListCampaignsRequest,
      io.github.resultsync.fitness.v1.ListCampaignsResponse> getListCampaignsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListCampaigns",
      requestType = io.github.resultsync.fitness.v1.ListCampaignsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListCampaignsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListCampaignsRequest,
      io.github.resultsync.fitness.v1.ListCampaignsResponse> getListCampaignsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListCampaignsRequest, io.github.resultsync.fitness.v1.ListCampaignsResponse> getListCampaignsMethod;
    if ((getListCampaignsMethod = ReconcileServiceGrpc.getListCampaignsMethod) == null) {
      synchronized (ReconcileServiceGrpc.class) {
        if ((getListCampaignsMethod = ReconcileServiceGrpc.getListCampaignsMethod) == null) {
          ReconcileServiceGrpc.getListCampaignsMethod = getListCampaignsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListCampaignsRequest, io.github.resultsync.fitness.v1.ListCampaignsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListCampaigns"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListCampaignsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListCampaignsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ReconcileServiceMethodDescriptorSupplier("ListCampaigns"))
              .build();
        }
      }
    }
    return getListCampaignsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ReconcileServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceStub>() {
        @java.lang.Override
        public ReconcileServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ReconcileServiceStub(channel, callOptions);
        }
      };
    return ReconcileServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ReconcileServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceBlockingV2Stub>() {
        @java.lang.Override
        public ReconcileServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ReconcileServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ReconcileServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ReconcileServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceBlockingStub>() {
        @java.lang.Override
        public ReconcileServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ReconcileServiceBlockingStub(channel, callOptions);
        }
      };
    return ReconcileServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ReconcileServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ReconcileServiceFutureStub>() {
        @java.lang.Override
        public ReconcileServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ReconcileServiceFutureStub(channel, callOptions);
        }
      };
    return ReconcileServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ReconcileService compares the ClickHouse projection with the authoritative
   * shard tables within a campaign scope and a revision boundary, and classifies
   * every discrepancy it finds. Runs are resources with a state machine; they
   * and their discrepancies are stored in the control database.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Starts a reconciliation run and returns it in state PENDING; it waits
     * QUEUED while the server executes its bounded number of runs. Idempotent
     * by the optional request_id: a retry returns the same run.
     * </pre>
     */
    default void startReconciliationRun(io.github.resultsync.fitness.v1.StartReconciliationRunRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.StartReconciliationRunResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getStartReconciliationRunMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns one run.
     * </pre>
     */
    default void getReconciliationRun(io.github.resultsync.fitness.v1.GetReconciliationRunRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetReconciliationRunResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetReconciliationRunMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists runs, newest first.
     * </pre>
     */
    default void listReconciliationRuns(io.github.resultsync.fitness.v1.ListReconciliationRunsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListReconciliationRunsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListReconciliationRunsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Streams the run's progress until it reaches a terminal state.
     * </pre>
     */
    default void watchReconciliationRun(io.github.resultsync.fitness.v1.WatchReconciliationRunRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchReconciliationRunResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchReconciliationRunMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the discrepancies a run reported.
     * </pre>
     */
    default void listDiscrepancies(io.github.resultsync.fitness.v1.ListDiscrepanciesRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListDiscrepanciesResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListDiscrepanciesMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists the campaigns of the reconciliation schedule (every campaign the
     * shards hold, seen by the scheduler) with their last clean scheduled run
     * and the progress of their rotating CONTENT sample.
     * </pre>
     */
    default void listCampaigns(io.github.resultsync.fitness.v1.ListCampaignsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListCampaignsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListCampaignsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ReconcileService.
   * <pre>
   * ReconcileService compares the ClickHouse projection with the authoritative
   * shard tables within a campaign scope and a revision boundary, and classifies
   * every discrepancy it finds. Runs are resources with a state machine; they
   * and their discrepancies are stored in the control database.
   * </pre>
   */
  public static abstract class ReconcileServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ReconcileServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ReconcileService.
   * <pre>
   * ReconcileService compares the ClickHouse projection with the authoritative
   * shard tables within a campaign scope and a revision boundary, and classifies
   * every discrepancy it finds. Runs are resources with a state machine; they
   * and their discrepancies are stored in the control database.
   * </pre>
   */
  public static final class ReconcileServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ReconcileServiceStub> {
    private ReconcileServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ReconcileServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ReconcileServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts a reconciliation run and returns it in state PENDING; it waits
     * QUEUED while the server executes its bounded number of runs. Idempotent
     * by the optional request_id: a retry returns the same run.
     * </pre>
     */
    public void startReconciliationRun(io.github.resultsync.fitness.v1.StartReconciliationRunRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.StartReconciliationRunResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getStartReconciliationRunMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns one run.
     * </pre>
     */
    public void getReconciliationRun(io.github.resultsync.fitness.v1.GetReconciliationRunRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetReconciliationRunResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetReconciliationRunMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists runs, newest first.
     * </pre>
     */
    public void listReconciliationRuns(io.github.resultsync.fitness.v1.ListReconciliationRunsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListReconciliationRunsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListReconciliationRunsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Streams the run's progress until it reaches a terminal state.
     * </pre>
     */
    public void watchReconciliationRun(io.github.resultsync.fitness.v1.WatchReconciliationRunRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchReconciliationRunResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchReconciliationRunMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the discrepancies a run reported.
     * </pre>
     */
    public void listDiscrepancies(io.github.resultsync.fitness.v1.ListDiscrepanciesRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListDiscrepanciesResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListDiscrepanciesMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists the campaigns of the reconciliation schedule (every campaign the
     * shards hold, seen by the scheduler) with their last clean scheduled run
     * and the progress of their rotating CONTENT sample.
     * </pre>
     */
    public void listCampaigns(io.github.resultsync.fitness.v1.ListCampaignsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListCampaignsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListCampaignsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ReconcileService.
   * <pre>
   * ReconcileService compares the ClickHouse projection with the authoritative
   * shard tables within a campaign scope and a revision boundary, and classifies
   * every discrepancy it finds. Runs are resources with a state machine; they
   * and their discrepancies are stored in the control database.
   * </pre>
   */
  public static final class ReconcileServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ReconcileServiceBlockingV2Stub> {
    private ReconcileServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ReconcileServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ReconcileServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts a reconciliation run and returns it in state PENDING; it waits
     * QUEUED while the server executes its bounded number of runs. Idempotent
     * by the optional request_id: a retry returns the same run.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.StartReconciliationRunResponse startReconciliationRun(io.github.resultsync.fitness.v1.StartReconciliationRunRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getStartReconciliationRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one run.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetReconciliationRunResponse getReconciliationRun(io.github.resultsync.fitness.v1.GetReconciliationRunRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetReconciliationRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists runs, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListReconciliationRunsResponse listReconciliationRuns(io.github.resultsync.fitness.v1.ListReconciliationRunsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListReconciliationRunsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams the run's progress until it reaches a terminal state.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, io.github.resultsync.fitness.v1.WatchReconciliationRunResponse>
        watchReconciliationRun(io.github.resultsync.fitness.v1.WatchReconciliationRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchReconciliationRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the discrepancies a run reported.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListDiscrepanciesResponse listDiscrepancies(io.github.resultsync.fitness.v1.ListDiscrepanciesRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListDiscrepanciesMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the campaigns of the reconciliation schedule (every campaign the
     * shards hold, seen by the scheduler) with their last clean scheduled run
     * and the progress of their rotating CONTENT sample.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListCampaignsResponse listCampaigns(io.github.resultsync.fitness.v1.ListCampaignsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListCampaignsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ReconcileService.
   * <pre>
   * ReconcileService compares the ClickHouse projection with the authoritative
   * shard tables within a campaign scope and a revision boundary, and classifies
   * every discrepancy it finds. Runs are resources with a state machine; they
   * and their discrepancies are stored in the control database.
   * </pre>
   */
  public static final class ReconcileServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ReconcileServiceBlockingStub> {
    private ReconcileServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ReconcileServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ReconcileServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts a reconciliation run and returns it in state PENDING; it waits
     * QUEUED while the server executes its bounded number of runs. Idempotent
     * by the optional request_id: a retry returns the same run.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.StartReconciliationRunResponse startReconciliationRun(io.github.resultsync.fitness.v1.StartReconciliationRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getStartReconciliationRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns one run.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetReconciliationRunResponse getReconciliationRun(io.github.resultsync.fitness.v1.GetReconciliationRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetReconciliationRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists runs, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListReconciliationRunsResponse listReconciliationRuns(io.github.resultsync.fitness.v1.ListReconciliationRunsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListReconciliationRunsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Streams the run's progress until it reaches a terminal state.
     * </pre>
     */
    public java.util.Iterator<io.github.resultsync.fitness.v1.WatchReconciliationRunResponse> watchReconciliationRun(
        io.github.resultsync.fitness.v1.WatchReconciliationRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchReconciliationRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the discrepancies a run reported.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListDiscrepanciesResponse listDiscrepancies(io.github.resultsync.fitness.v1.ListDiscrepanciesRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListDiscrepanciesMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists the campaigns of the reconciliation schedule (every campaign the
     * shards hold, seen by the scheduler) with their last clean scheduled run
     * and the progress of their rotating CONTENT sample.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListCampaignsResponse listCampaigns(io.github.resultsync.fitness.v1.ListCampaignsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListCampaignsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ReconcileService.
   * <pre>
   * ReconcileService compares the ClickHouse projection with the authoritative
   * shard tables within a campaign scope and a revision boundary, and classifies
   * every discrepancy it finds. Runs are resources with a state machine; they
   * and their discrepancies are stored in the control database.
   * </pre>
   */
  public static final class ReconcileServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ReconcileServiceFutureStub> {
    private ReconcileServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ReconcileServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ReconcileServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Starts a reconciliation run and returns it in state PENDING; it waits
     * QUEUED while the server executes its bounded number of runs. Idempotent
     * by the optional request_id: a retry returns the same run.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.StartReconciliationRunResponse> startReconciliationRun(
        io.github.resultsync.fitness.v1.StartReconciliationRunRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getStartReconciliationRunMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns one run.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.GetReconciliationRunResponse> getReconciliationRun(
        io.github.resultsync.fitness.v1.GetReconciliationRunRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetReconciliationRunMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists runs, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListReconciliationRunsResponse> listReconciliationRuns(
        io.github.resultsync.fitness.v1.ListReconciliationRunsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListReconciliationRunsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the discrepancies a run reported.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListDiscrepanciesResponse> listDiscrepancies(
        io.github.resultsync.fitness.v1.ListDiscrepanciesRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListDiscrepanciesMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists the campaigns of the reconciliation schedule (every campaign the
     * shards hold, seen by the scheduler) with their last clean scheduled run
     * and the progress of their rotating CONTENT sample.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListCampaignsResponse> listCampaigns(
        io.github.resultsync.fitness.v1.ListCampaignsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListCampaignsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_START_RECONCILIATION_RUN = 0;
  private static final int METHODID_GET_RECONCILIATION_RUN = 1;
  private static final int METHODID_LIST_RECONCILIATION_RUNS = 2;
  private static final int METHODID_WATCH_RECONCILIATION_RUN = 3;
  private static final int METHODID_LIST_DISCREPANCIES = 4;
  private static final int METHODID_LIST_CAMPAIGNS = 5;

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
        case METHODID_START_RECONCILIATION_RUN:
          serviceImpl.startReconciliationRun((io.github.resultsync.fitness.v1.StartReconciliationRunRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.StartReconciliationRunResponse>) responseObserver);
          break;
        case METHODID_GET_RECONCILIATION_RUN:
          serviceImpl.getReconciliationRun((io.github.resultsync.fitness.v1.GetReconciliationRunRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetReconciliationRunResponse>) responseObserver);
          break;
        case METHODID_LIST_RECONCILIATION_RUNS:
          serviceImpl.listReconciliationRuns((io.github.resultsync.fitness.v1.ListReconciliationRunsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListReconciliationRunsResponse>) responseObserver);
          break;
        case METHODID_WATCH_RECONCILIATION_RUN:
          serviceImpl.watchReconciliationRun((io.github.resultsync.fitness.v1.WatchReconciliationRunRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.WatchReconciliationRunResponse>) responseObserver);
          break;
        case METHODID_LIST_DISCREPANCIES:
          serviceImpl.listDiscrepancies((io.github.resultsync.fitness.v1.ListDiscrepanciesRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListDiscrepanciesResponse>) responseObserver);
          break;
        case METHODID_LIST_CAMPAIGNS:
          serviceImpl.listCampaigns((io.github.resultsync.fitness.v1.ListCampaignsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListCampaignsResponse>) responseObserver);
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
          getStartReconciliationRunMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.StartReconciliationRunRequest,
              io.github.resultsync.fitness.v1.StartReconciliationRunResponse>(
                service, METHODID_START_RECONCILIATION_RUN)))
        .addMethod(
          getGetReconciliationRunMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.GetReconciliationRunRequest,
              io.github.resultsync.fitness.v1.GetReconciliationRunResponse>(
                service, METHODID_GET_RECONCILIATION_RUN)))
        .addMethod(
          getListReconciliationRunsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListReconciliationRunsRequest,
              io.github.resultsync.fitness.v1.ListReconciliationRunsResponse>(
                service, METHODID_LIST_RECONCILIATION_RUNS)))
        .addMethod(
          getWatchReconciliationRunMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.WatchReconciliationRunRequest,
              io.github.resultsync.fitness.v1.WatchReconciliationRunResponse>(
                service, METHODID_WATCH_RECONCILIATION_RUN)))
        .addMethod(
          getListDiscrepanciesMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListDiscrepanciesRequest,
              io.github.resultsync.fitness.v1.ListDiscrepanciesResponse>(
                service, METHODID_LIST_DISCREPANCIES)))
        .addMethod(
          getListCampaignsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListCampaignsRequest,
              io.github.resultsync.fitness.v1.ListCampaignsResponse>(
                service, METHODID_LIST_CAMPAIGNS)))
        .build();
  }

  private static abstract class ReconcileServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ReconcileServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.github.resultsync.fitness.v1.ReconcileProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ReconcileService");
    }
  }

  private static final class ReconcileServiceFileDescriptorSupplier
      extends ReconcileServiceBaseDescriptorSupplier {
    ReconcileServiceFileDescriptorSupplier() {}
  }

  private static final class ReconcileServiceMethodDescriptorSupplier
      extends ReconcileServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ReconcileServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ReconcileServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ReconcileServiceFileDescriptorSupplier())
              .addMethod(getStartReconciliationRunMethod())
              .addMethod(getGetReconciliationRunMethod())
              .addMethod(getListReconciliationRunsMethod())
              .addMethod(getWatchReconciliationRunMethod())
              .addMethod(getListDiscrepanciesMethod())
              .addMethod(getListCampaignsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
