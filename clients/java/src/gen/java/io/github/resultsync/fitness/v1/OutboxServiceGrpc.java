package io.github.resultsync.fitness.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * OutboxService administers the relay that drains every shard's outbox into
 * Pulsar: it shows what is pending, stuck or parked, and replays parked events
 * through an explicit, audited call.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class OutboxServiceGrpc {

  private OutboxServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fitness.v1.OutboxService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListOutboxEventsRequest,
      io.github.resultsync.fitness.v1.ListOutboxEventsResponse> getListOutboxEventsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListOutboxEvents",
      requestType = io.github.resultsync.fitness.v1.ListOutboxEventsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListOutboxEventsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListOutboxEventsRequest,
      io.github.resultsync.fitness.v1.ListOutboxEventsResponse> getListOutboxEventsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListOutboxEventsRequest, io.github.resultsync.fitness.v1.ListOutboxEventsResponse> getListOutboxEventsMethod;
    if ((getListOutboxEventsMethod = OutboxServiceGrpc.getListOutboxEventsMethod) == null) {
      synchronized (OutboxServiceGrpc.class) {
        if ((getListOutboxEventsMethod = OutboxServiceGrpc.getListOutboxEventsMethod) == null) {
          OutboxServiceGrpc.getListOutboxEventsMethod = getListOutboxEventsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListOutboxEventsRequest, io.github.resultsync.fitness.v1.ListOutboxEventsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListOutboxEvents"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListOutboxEventsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListOutboxEventsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new OutboxServiceMethodDescriptorSupplier("ListOutboxEvents"))
              .build();
        }
      }
    }
    return getListOutboxEventsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetOutboxStatsRequest,
      io.github.resultsync.fitness.v1.GetOutboxStatsResponse> getGetOutboxStatsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetOutboxStats",
      requestType = io.github.resultsync.fitness.v1.GetOutboxStatsRequest.class,
      responseType = io.github.resultsync.fitness.v1.GetOutboxStatsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetOutboxStatsRequest,
      io.github.resultsync.fitness.v1.GetOutboxStatsResponse> getGetOutboxStatsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetOutboxStatsRequest, io.github.resultsync.fitness.v1.GetOutboxStatsResponse> getGetOutboxStatsMethod;
    if ((getGetOutboxStatsMethod = OutboxServiceGrpc.getGetOutboxStatsMethod) == null) {
      synchronized (OutboxServiceGrpc.class) {
        if ((getGetOutboxStatsMethod = OutboxServiceGrpc.getGetOutboxStatsMethod) == null) {
          OutboxServiceGrpc.getGetOutboxStatsMethod = getGetOutboxStatsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.GetOutboxStatsRequest, io.github.resultsync.fitness.v1.GetOutboxStatsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetOutboxStats"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetOutboxStatsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetOutboxStatsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new OutboxServiceMethodDescriptorSupplier("GetOutboxStats"))
              .build();
        }
      }
    }
    return getGetOutboxStatsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ReplayParkedEventsRequest,
      io.github.resultsync.fitness.v1.ReplayParkedEventsResponse> getReplayParkedEventsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ReplayParkedEvents",
      requestType = io.github.resultsync.fitness.v1.ReplayParkedEventsRequest.class,
      responseType = io.github.resultsync.fitness.v1.ReplayParkedEventsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ReplayParkedEventsRequest,
      io.github.resultsync.fitness.v1.ReplayParkedEventsResponse> getReplayParkedEventsMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ReplayParkedEventsRequest, io.github.resultsync.fitness.v1.ReplayParkedEventsResponse> getReplayParkedEventsMethod;
    if ((getReplayParkedEventsMethod = OutboxServiceGrpc.getReplayParkedEventsMethod) == null) {
      synchronized (OutboxServiceGrpc.class) {
        if ((getReplayParkedEventsMethod = OutboxServiceGrpc.getReplayParkedEventsMethod) == null) {
          OutboxServiceGrpc.getReplayParkedEventsMethod = getReplayParkedEventsMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ReplayParkedEventsRequest, io.github.resultsync.fitness.v1.ReplayParkedEventsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ReplayParkedEvents"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ReplayParkedEventsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ReplayParkedEventsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new OutboxServiceMethodDescriptorSupplier("ReplayParkedEvents"))
              .build();
        }
      }
    }
    return getReplayParkedEventsMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static OutboxServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<OutboxServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<OutboxServiceStub>() {
        @java.lang.Override
        public OutboxServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new OutboxServiceStub(channel, callOptions);
        }
      };
    return OutboxServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static OutboxServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<OutboxServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<OutboxServiceBlockingV2Stub>() {
        @java.lang.Override
        public OutboxServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new OutboxServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return OutboxServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static OutboxServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<OutboxServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<OutboxServiceBlockingStub>() {
        @java.lang.Override
        public OutboxServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new OutboxServiceBlockingStub(channel, callOptions);
        }
      };
    return OutboxServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static OutboxServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<OutboxServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<OutboxServiceFutureStub>() {
        @java.lang.Override
        public OutboxServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new OutboxServiceFutureStub(channel, callOptions);
        }
      };
    return OutboxServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * OutboxService administers the relay that drains every shard's outbox into
   * Pulsar: it shows what is pending, stuck or parked, and replays parked events
   * through an explicit, audited call.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Lists outbox events of one shard, filtered by status, ordered by id.
     * </pre>
     */
    default void listOutboxEvents(io.github.resultsync.fitness.v1.ListOutboxEventsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListOutboxEventsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListOutboxEventsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Returns counts per status, the oldest unsent age and expired claims per shard.
     * </pre>
     */
    default void getOutboxStats(io.github.resultsync.fitness.v1.GetOutboxStatsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetOutboxStatsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetOutboxStatsMethod(), responseObserver);
    }

    /**
     * <pre>
     * Moves PARKED events back to NEW so the relay publishes them again. The
     * caller and reason are recorded in the audit log. Idempotent by the
     * optional request_id.
     * </pre>
     */
    default void replayParkedEvents(io.github.resultsync.fitness.v1.ReplayParkedEventsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ReplayParkedEventsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getReplayParkedEventsMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service OutboxService.
   * <pre>
   * OutboxService administers the relay that drains every shard's outbox into
   * Pulsar: it shows what is pending, stuck or parked, and replays parked events
   * through an explicit, audited call.
   * </pre>
   */
  public static abstract class OutboxServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return OutboxServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service OutboxService.
   * <pre>
   * OutboxService administers the relay that drains every shard's outbox into
   * Pulsar: it shows what is pending, stuck or parked, and replays parked events
   * through an explicit, audited call.
   * </pre>
   */
  public static final class OutboxServiceStub
      extends io.grpc.stub.AbstractAsyncStub<OutboxServiceStub> {
    private OutboxServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected OutboxServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new OutboxServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Lists outbox events of one shard, filtered by status, ordered by id.
     * </pre>
     */
    public void listOutboxEvents(io.github.resultsync.fitness.v1.ListOutboxEventsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListOutboxEventsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListOutboxEventsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Returns counts per status, the oldest unsent age and expired claims per shard.
     * </pre>
     */
    public void getOutboxStats(io.github.resultsync.fitness.v1.GetOutboxStatsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetOutboxStatsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetOutboxStatsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Moves PARKED events back to NEW so the relay publishes them again. The
     * caller and reason are recorded in the audit log. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public void replayParkedEvents(io.github.resultsync.fitness.v1.ReplayParkedEventsRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ReplayParkedEventsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getReplayParkedEventsMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service OutboxService.
   * <pre>
   * OutboxService administers the relay that drains every shard's outbox into
   * Pulsar: it shows what is pending, stuck or parked, and replays parked events
   * through an explicit, audited call.
   * </pre>
   */
  public static final class OutboxServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<OutboxServiceBlockingV2Stub> {
    private OutboxServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected OutboxServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new OutboxServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Lists outbox events of one shard, filtered by status, ordered by id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListOutboxEventsResponse listOutboxEvents(io.github.resultsync.fitness.v1.ListOutboxEventsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListOutboxEventsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns counts per status, the oldest unsent age and expired claims per shard.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetOutboxStatsResponse getOutboxStats(io.github.resultsync.fitness.v1.GetOutboxStatsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetOutboxStatsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Moves PARKED events back to NEW so the relay publishes them again. The
     * caller and reason are recorded in the audit log. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ReplayParkedEventsResponse replayParkedEvents(io.github.resultsync.fitness.v1.ReplayParkedEventsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getReplayParkedEventsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service OutboxService.
   * <pre>
   * OutboxService administers the relay that drains every shard's outbox into
   * Pulsar: it shows what is pending, stuck or parked, and replays parked events
   * through an explicit, audited call.
   * </pre>
   */
  public static final class OutboxServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<OutboxServiceBlockingStub> {
    private OutboxServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected OutboxServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new OutboxServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Lists outbox events of one shard, filtered by status, ordered by id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListOutboxEventsResponse listOutboxEvents(io.github.resultsync.fitness.v1.ListOutboxEventsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListOutboxEventsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Returns counts per status, the oldest unsent age and expired claims per shard.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetOutboxStatsResponse getOutboxStats(io.github.resultsync.fitness.v1.GetOutboxStatsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetOutboxStatsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Moves PARKED events back to NEW so the relay publishes them again. The
     * caller and reason are recorded in the audit log. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ReplayParkedEventsResponse replayParkedEvents(io.github.resultsync.fitness.v1.ReplayParkedEventsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getReplayParkedEventsMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service OutboxService.
   * <pre>
   * OutboxService administers the relay that drains every shard's outbox into
   * Pulsar: it shows what is pending, stuck or parked, and replays parked events
   * through an explicit, audited call.
   * </pre>
   */
  public static final class OutboxServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<OutboxServiceFutureStub> {
    private OutboxServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected OutboxServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new OutboxServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Lists outbox events of one shard, filtered by status, ordered by id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListOutboxEventsResponse> listOutboxEvents(
        io.github.resultsync.fitness.v1.ListOutboxEventsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListOutboxEventsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Returns counts per status, the oldest unsent age and expired claims per shard.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.GetOutboxStatsResponse> getOutboxStats(
        io.github.resultsync.fitness.v1.GetOutboxStatsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetOutboxStatsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Moves PARKED events back to NEW so the relay publishes them again. The
     * caller and reason are recorded in the audit log. Idempotent by the
     * optional request_id.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ReplayParkedEventsResponse> replayParkedEvents(
        io.github.resultsync.fitness.v1.ReplayParkedEventsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getReplayParkedEventsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_LIST_OUTBOX_EVENTS = 0;
  private static final int METHODID_GET_OUTBOX_STATS = 1;
  private static final int METHODID_REPLAY_PARKED_EVENTS = 2;

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
        case METHODID_LIST_OUTBOX_EVENTS:
          serviceImpl.listOutboxEvents((io.github.resultsync.fitness.v1.ListOutboxEventsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListOutboxEventsResponse>) responseObserver);
          break;
        case METHODID_GET_OUTBOX_STATS:
          serviceImpl.getOutboxStats((io.github.resultsync.fitness.v1.GetOutboxStatsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetOutboxStatsResponse>) responseObserver);
          break;
        case METHODID_REPLAY_PARKED_EVENTS:
          serviceImpl.replayParkedEvents((io.github.resultsync.fitness.v1.ReplayParkedEventsRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ReplayParkedEventsResponse>) responseObserver);
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
          getListOutboxEventsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListOutboxEventsRequest,
              io.github.resultsync.fitness.v1.ListOutboxEventsResponse>(
                service, METHODID_LIST_OUTBOX_EVENTS)))
        .addMethod(
          getGetOutboxStatsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.GetOutboxStatsRequest,
              io.github.resultsync.fitness.v1.GetOutboxStatsResponse>(
                service, METHODID_GET_OUTBOX_STATS)))
        .addMethod(
          getReplayParkedEventsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ReplayParkedEventsRequest,
              io.github.resultsync.fitness.v1.ReplayParkedEventsResponse>(
                service, METHODID_REPLAY_PARKED_EVENTS)))
        .build();
  }

  private static abstract class OutboxServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    OutboxServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.github.resultsync.fitness.v1.OutboxProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("OutboxService");
    }
  }

  private static final class OutboxServiceFileDescriptorSupplier
      extends OutboxServiceBaseDescriptorSupplier {
    OutboxServiceFileDescriptorSupplier() {}
  }

  private static final class OutboxServiceMethodDescriptorSupplier
      extends OutboxServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    OutboxServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (OutboxServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new OutboxServiceFileDescriptorSupplier())
              .addMethod(getListOutboxEventsMethod())
              .addMethod(getGetOutboxStatsMethod())
              .addMethod(getReplayParkedEventsMethod())
              .build();
        }
      }
    }
    return result;
  }
}
