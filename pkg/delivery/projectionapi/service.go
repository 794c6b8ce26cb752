// Package projectionapi implements fitness.v1.ProjectionService: projection
// lag per source shard and the dead-lettered events.
package projectionapi

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/paging"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// DeadLetterLister lists dead letters (chstore.Projection).
type DeadLetterLister interface {
	DeadLetters(ctx context.Context, beforeMs int64, limit int) ([]chstore.DeadLetter, error)
}

// Service implements fitness.v1.ProjectionService.
type Service struct {
	fitnessv1.UnimplementedProjectionServiceServer
	lag  *consumer.Lag
	dead DeadLetterLister
}

// New returns the service.
func New(lag *consumer.Lag, dead DeadLetterLister) *Service { return &Service{lag: lag, dead: dead} }

// GetProjectionStatus implements fitness.v1.ProjectionService.
func (s *Service) GetProjectionStatus(ctx context.Context, _ *fitnessv1.GetProjectionStatusRequest) (*fitnessv1.GetProjectionStatusResponse, error) {
	if err := auth.CheckPlatform(ctx, "the projection"); err != nil {
		return nil, err
	}
	resp := &fitnessv1.GetProjectionStatusResponse{AppliedEvents: s.lag.Applied(), DeadLetteredEvents: s.lag.DeadLettered()}
	for _, l := range s.lag.Snapshot(time.Now()) {
		resp.Shards = append(resp.Shards, &fitnessv1.ShardLag{
			ShardId: l.ShardID, NewestAppliedCommitTime: timestamppb.New(l.NewestCommit),
			Lag: durationpb.New(l.Lag.Truncate(time.Millisecond)), IngestDelay: durationpb.New(l.IngestDelay),
		})
	}
	return resp, nil
}

// ListDeadLetters implements fitness.v1.ProjectionService.
func (s *Service) ListDeadLetters(ctx context.Context, req *fitnessv1.ListDeadLettersRequest) (*fitnessv1.ListDeadLettersResponse, error) {
	if err := auth.CheckPlatform(ctx, "the projection"); err != nil {
		return nil, err
	}
	size, err := paging.Size(req.GetPageSize(), 100, 1000)
	if err != nil {
		return nil, err
	}
	before, err := paging.Position(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	dl, err := s.dead.DeadLetters(ctx, before, size+1)
	if err != nil {
		return nil, apierr.Status(fmt.Errorf("listing dead letters: %w", err))
	}
	resp := &fitnessv1.ListDeadLettersResponse{}
	if len(dl) > size {
		dl = dl[:size]
		resp.NextPageToken = paging.Token(dl[size-1].Time.UnixMilli())
	}
	for _, d := range dl {
		resp.DeadLetters = append(resp.DeadLetters, &fitnessv1.DeadLetter{MessageId: d.MessageID, EventId: d.EventID, Reason: d.Reason, CreateTime: timestamppb.New(d.Time)})
	}
	return resp, nil
}
